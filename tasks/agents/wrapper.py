"""Role agents: every role runs through one Prefect task, whatever answers it.

A role (planner, optimizer, author, reviewer) is a prompt in `roles/<prompt>.md`, rendered with
jinja2, plus a pydantic output model. Its *responder* is any callable taking a `RoleRequest`
and returning the output model (or a dict that validates into it), sync or async. Every role
has a deterministic responder in `tasks.roles_default` that needs no model, and the lane roles
and the reviewer have a model-driven one (`tasks.agents.loop`, `tasks.agents.review`) that
answers instead when a model is configured (an API key is set); any responder can be named in
the `agents` mapping (role -> "module:callable"), which wins over both.

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
import importlib
import inspect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from prefect import task
from prefect.cache_policies import NONE
from prefect.tasks import exponential_backoff
from pydantic import BaseModel

from scripts.errors import BadInput
from tasks.agents.outputs import AuthorPlan, ReportProse
from tasks.models import DiscoverPlan
from tasks.results import Review, SearchOutcome
from tasks.run_store import write_json

ROOT = Path(__file__).resolve().parents[2]
ROLES_DIR = ROOT / "roles"


class DeadlineExceeded(Exception):
    """Raised by a lane's check_fn once its role's deadline has passed."""


class RoleFailed(Exception):
    def __init__(self, role: str, reason: str):
        super().__init__(f"{role}: {reason}")
        self.role = role
        self.reason = reason


class Deadline:
    """Wall-clock limit shared by a role attempt and the work it starts."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._end = time.monotonic() + seconds
        self._cancelled = threading.Event()

    def remaining(self) -> float:
        return 0.0 if self._cancelled.is_set() else max(0.0, self._end - time.monotonic())

    def cancel(self) -> None:
        self._cancelled.set()


@dataclass
class RoleRequest:
    role: str
    prompt: str  # the rendered roles/<prompt>.md: what a model-backed responder is asked
    inputs: dict[str, Any]  # objects a deterministic responder works from (not serialised)
    output: type[BaseModel]
    deadline: Deadline
    record_dir: Path
    context: dict[str, Any] = field(default_factory=dict)  # what the prompt was rendered with


@dataclass(frozen=True)
class RoleSpec:
    output: type[BaseModel]
    responder: str  # the deterministic responder, "module:callable"
    timeout_s: float
    retries: int
    retry_delay_s: float = 2.0
    prompt: str = ""  # roles/<prompt>.md (default: the role's name)
    model_responder: str | None = None  # answers instead when a model is configured


LANE_LOOP = "tasks.agents.loop:run_lane"
ROLES: dict[str, RoleSpec] = {
    "planner": RoleSpec(DiscoverPlan, "tasks.roles_default:plan_from_measurements", 3600, 0),
    "optimizer": RoleSpec(
        SearchOutcome, "tasks.roles_default:search", 3600, 0, 2.0, "kernel_optimizer", LANE_LOOP
    ),
    "author": RoleSpec(
        SearchOutcome, "tasks.roles_default:search", 3600, 0, 2.0, "kernel_author", LANE_LOOP
    ),
    # model faults are retried inside the driver, so the model reviewer's wrapper retries are
    # for the deterministic one's sake only
    "reviewer": RoleSpec(
        Review, "tasks.roles_default:review", 600, 2, 2.0, "reviewer", "tasks.agents.review:review"
    ),
    # asked only where a model (or a drop-in) answers them: tasks/agents/judgment.py
    "op_benchmarker": RoleSpec(
        AuthorPlan,
        "tasks.roles_default:author_plan",
        600,
        0,
        2.0,
        "op_benchmarker",
        "tasks.agents.judgment:benchmark",
    ),
    "reporter": RoleSpec(
        ReportProse,
        "tasks.roles_default:no_prose",
        600,
        0,
        2.0,
        "reporter",
        "tasks.agents.judgment:write_prose",
    ),
}


def responder_for(role: str, agents: dict[str, str] | None) -> str:
    """The drop-in named in `agents`, else the model-driven responder when a model is
    configured, else the deterministic one."""
    from tasks.agents.settings import model_configured

    spec = ROLES[role]
    if role in (agents or {}):
        return agents[role]
    if spec.model_responder and model_configured():
        return spec.model_responder
    return spec.responder


def check_agents(agents: dict[str, str] | None) -> dict[str, str]:
    """Validate a role -> responder mapping; BadInput for unknown roles or unloadable paths."""
    agents = dict(agents or {})
    for role, path in agents.items():
        if role not in ROLES:
            raise BadInput("agents", f"unknown role {role!r}; roles: {', '.join(ROLES)}")
        load_responder(path)
    return agents


def load_responder(path: str) -> Callable:
    module_name, _, attr = path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise BadInput("agents", f"cannot load responder {path!r}: {exc}") from None


_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(ROLES_DIR),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)


def render_prompt(role: str, context: dict[str, Any]) -> str:
    return _env.get_template(f"{role}.md").render(**context)


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
    responder_path: str,
    prompt: str,
    inputs: dict,
    record_dir: str,
    timeout_s: float,
    context: dict | None = None,
) -> BaseModel:
    spec = ROLES[role]
    responder = load_responder(responder_path)
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
    inputs: dict[str, Any],
    context: dict[str, Any],
    record_dir: Path,
    agents: dict[str, str] | None = None,
    timeout_s: float | None = None,
    retries: int | None = None,
    retry_delay_s: float | None = None,
):
    """Ask `role` from a sync flow; return its validated answer or raise RoleFailed."""
    spec = ROLES[role]
    responder = responder_for(role, agents)
    timeout_s = timeout_s or spec.timeout_s
    retries = spec.retries if retries is None else retries
    delay = spec.retry_delay_s if retry_delay_s is None else retry_delay_s
    record_dir = Path(record_dir)
    record_dir.mkdir(parents=True, exist_ok=True)
    prompt = render_prompt(spec.prompt or role, context)
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
