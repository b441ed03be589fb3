"""ask(): every role runs through one Prefect task (`role`), whatever answers it.

A role (tasks/agents/roles/) is a prompt in `roles/<prompt>.md`, typed inputs and a pydantic
output model. Its *responder* is any callable taking a `RoleRequest` and returning the output
model (or a dict that validates into it), sync or async: the role's deterministic one, its
model-driven one when a model is configured, or a drop-in named in the `agents` mapping
(tasks/agents/registry.py picks).

The task is async, so Prefect's `timeout_seconds` really cancels it. A sync responder runs in
a daemon thread that the timeout abandons; it is also handed a `Deadline`, which the lane's
`check_fn` honours (no new check after it, each check's own timeout clamped to it), so
abandoned work stops by the deadline instead of running on. Retries with exponential backoff
are for faults (an API error, an answer that does not validate, a hang); after the last
attempt `ask` raises `RoleFailed` and the caller marks its lane failed.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NONE
from prefect.tasks import exponential_backoff
from pydantic import BaseModel

from kernel_bakeoff.tasks.agents.prompts import render_prompt
from kernel_bakeoff.tasks.agents.registry import ROLES, Responder, responder_for
from kernel_bakeoff.tasks.agents.request import RoleInputs, RoleRequest
from kernel_bakeoff.tasks.check.deadline import Deadline
from kernel_bakeoff.tasks.run.directory import write_json


class RoleFailed(Exception):
    def __init__(self, role: str, reason: str):
        super().__init__(f"{role}: {reason}")
        self.role = role
        self.reason = reason


async def _in_daemon_thread(fn: Callable, request: RoleRequest):
    """Run a sync responder where a timeout can abandon it without blocking process exit."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()
    ctx = contextvars.copy_context()  # Prefect's run context, so nested tasks attach here

    def settle(value, exc):
        if not done.done():
            done.set_exception(exc) if exc else done.set_result(value)

    def work():
        try:
            value, exc = ctx.run(fn, request), None
        except BaseException as e:  # handed to the awaiting task, never lost
            value, exc = None, e
        try:
            loop.call_soon_threadsafe(settle, value, exc)
        except RuntimeError:  # the loop closed: the role was timed out and nobody waits
            pass  # (its transcript was closed with the reason by the responder itself)

    threading.Thread(target=work, name=f"role-{request.role}", daemon=True).start()
    return await done


@task(name="role", cache_policy=NONE)
async def _role_attempt(
    role: str,
    responder: Responder,
    prompt: str,
    inputs: RoleInputs,
    record_dir: str,
    timeout_s: float,
    context: dict | None = None,
) -> BaseModel:
    spec = ROLES[role]
    deadline = Deadline(timeout_s)
    request = RoleRequest(
        role, prompt, inputs, spec.output, deadline, Path(record_dir), dict(context or {})
    )
    try:
        if inspect.iscoroutinefunction(responder):
            answer = await responder(request)
        else:
            answer = await _in_daemon_thread(responder, request)
    finally:
        deadline.cancel()  # whatever was abandoned starts no new work
    data = answer.model_dump(mode="json") if isinstance(answer, BaseModel) else answer
    validated = spec.output.model_validate(data)
    write_json(Path(record_dir) / f"{role}.answer.json", validated)
    return validated


def ask(
    role: str,
    *,
    inputs: RoleInputs | dict[str, Any],
    context: dict[str, Any],
    record_dir: Path,
    agents: dict[str, str] | None = None,
    timeout_s: float | None = None,
    retries: int | None = None,
    retry_delay_s: float | None = None,
):
    """Ask `role` from a sync flow; return its validated answer or raise RoleFailed.
    `inputs` is the role's inputs model, or a dict validated into it here."""
    spec = ROLES[role]
    inputs = spec.inputs.model_validate(inputs)
    responder = responder_for(role, agents)
    timeout_s = timeout_s or spec.timeout_s
    retries = spec.retries if retries is None else retries
    delay = spec.retry_delay_s if retry_delay_s is None else retry_delay_s
    record_dir = Path(record_dir)
    record_dir.mkdir(parents=True, exist_ok=True)
    prompt = render_prompt(spec.prompt, context)
    (record_dir / f"{role}.prompt.md").write_text(prompt)
    attempt = _role_attempt.with_options(
        task_run_name=f"{role}",
        timeout_seconds=timeout_s,
        retries=retries,
        retry_delay_seconds=exponential_backoff(backoff_factor=delay) if retries else 0,
    )
    state = asyncio.run(
        attempt(
            role, responder, prompt, inputs, str(record_dir), timeout_s, context, return_state=True
        )
    )
    if state.is_completed():
        return state.result()
    tries = f"{retries + 1} attempt{'s' if retries else ''}"
    raise RoleFailed(role, f"no valid answer after {tries}: {_reason(state)}")


def _reason(state) -> str:
    try:
        state.result()
    except Exception as exc:
        text = str(exc) or type(exc).__name__
        if "timeout" in type(exc).__name__.lower() or "timed out" in text:
            return state.message or text
        return f"{type(exc).__name__}: {text}"
    return state.message or state.type.value
