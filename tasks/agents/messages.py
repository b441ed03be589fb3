"""The Messages API driver: one conversation per role call, tools, and a structured answer.

The model works through the lane's tools and finishes by calling `submit`, whose input schema is
the role's pydantic model. An answer that does not validate is sent back once with the
validation error; a second invalid answer fails the role with that reason. API faults (429, 5xx,
timeouts, dropped connections) are retried here and only here, with exponential backoff (or the
server's `retry-after`); the SDK's own retries are off so that no second layer retries.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import anthropic
from pydantic import BaseModel, ValidationError

from kernel_bakeoff.tasks.agents.drivers import RoleError, Tools
from kernel_bakeoff.tasks.agents.settings import AgentSettings, take_key
from kernel_bakeoff.tasks.agents.transcript import BudgetSpent, Transcript

SUBMIT = "submit"
RETRIED = (anthropic.RateLimitError, anthropic.InternalServerError, anthropic.APIConnectionError)


def client_for(settings: AgentSettings) -> anthropic.Anthropic:
    key = take_key()
    if key is None:
        raise RoleError("no API key")
    return anthropic.Anthropic(
        api_key=key, base_url=settings.base_url, timeout=settings.api_timeout_s, max_retries=0
    )


def submit_tool(output: type[BaseModel]) -> dict:
    return {
        "name": SUBMIT,
        "description": "Finish this role call with your answer. Its input must match the schema; "
        "an answer that does not is returned to you once with the validation error.",
        "input_schema": output.model_json_schema(),
    }


def _delay(exc: Exception, attempt: int, settings: AgentSettings) -> float:
    response = getattr(exc, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    try:
        if header is not None and 0 < float(header) <= settings.retry_cap_s:
            return float(header)
    except ValueError:
        pass
    return min(settings.retry_cap_s, settings.retry_base_s * 2**attempt)


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}{f' (HTTP {status})' if status else ''}: {exc}"


def create_with_retries(
    client: anthropic.Anthropic,
    settings: AgentSettings,
    transcript: Transcript,
    remaining: Callable[[], float],
    **request: Any,
):
    """One model answer; faults retried with backoff; RoleError after the last attempt."""
    attempts = settings.api_retries + 1
    for attempt in range(attempts):
        left = remaining()
        if left <= 0:
            raise RoleError("the role's deadline passed before the model answered")
        try:
            return client.with_options(timeout=min(settings.api_timeout_s, left)).messages.create(
                **request
            )
        except RETRIED as exc:
            if attempt == attempts - 1:
                raise RoleError(f"API fault after {attempts} attempts: {_describe(exc)}") from None
            wait = min(_delay(exc, attempt, settings), max(0.0, remaining()))
            transcript.event("fault", attempt=attempt + 1, error=_describe(exc), retry_in_s=wait)
            transcript.retried()
            time.sleep(wait)
        except anthropic.APIStatusError as exc:  # 400, 401, 403, 404: retrying cannot help
            raise RoleError(f"API refused the request: {_describe(exc)}") from None
    raise AssertionError("unreachable")


def kept_content(content: list[dict], limit: int) -> tuple[list[dict], dict[str, str]]:
    """The model's answer as the conversation keeps it: a tool call's input over `limit`
    characters is replaced by a note, so it is not sent again with every later request (nor
    written to the transcript whole); the tool refuses it (`LaneTools.call`). An input that is
    not an object (null, a list, a string) is kept as `{}` and answered as a tool error, so no
    shape of call ends the lane. Also: the notes, by tool call id."""
    kept, notes = [], {}
    for block in content:
        if block.get("type") == "tool_use" and not isinstance(block.get("input"), dict):
            # null, a list, a string, or no input at all (dropped as None when the block was
            # dumped): the API takes back only an object, and the tool only named fields
            found = block.get("input")
            shape = "null or missing" if found is None else f"a {type(found).__name__}"
            notes[block.get("id")] = f"{shape}, not an object of the tool's fields"
            block = {**block, "input": {}}
        elif block.get("type") == "tool_use":
            size = len(json.dumps(block.get("input"), default=str))
            if size > limit:
                notes[block["id"]] = f"{size} characters, over the {limit}-character limit"
                block = {**block, "input": {"omitted": notes[block["id"]] + ": refused, not kept"}}
        kept.append(block)
    return kept, notes


def converse(
    *,
    settings: AgentSettings,
    transcript: Transcript,
    system: str,
    prompt: str,
    tools: Tools,
    output: type[BaseModel],
    remaining: Callable[[], float] = lambda: float("inf"),
    client: anthropic.Anthropic | None = None,
    accept: Callable[[BaseModel], None] | None = None,
) -> BaseModel:
    """Run one role conversation to its validated `output`, or raise RoleError / BudgetSpent.

    `accept` may refuse a schema-valid answer with a ValueError (treated as a validation error)."""
    client = client or client_for(settings)
    schemas = [*tools.schemas(), submit_tool(output)]
    messages: list[dict] = [{"role": "user", "content": prompt}]
    transcript.event("prompt", system=system, prompt=prompt, tools=[t["name"] for t in schemas])
    invalid_answers, nudges = 0, 0
    for _turn in range(settings.max_turns):
        spent = transcript.ledger.spent()
        if spent:
            raise BudgetSpent(spent)
        request = dict(
            model=settings.model,
            max_tokens=settings.max_tokens,
            system=system,
            messages=messages,
            tools=schemas,
        )
        if settings.temperature is not None:
            request["temperature"] = settings.temperature
        answer = create_with_retries(client, settings, transcript, remaining, **request)
        transcript.usage(answer.usage.input_tokens, answer.usage.output_tokens)
        content = [
            block.model_dump(mode="json", exclude_none=True, warnings=False)
            for block in answer.content
        ]
        content, omitted = kept_content(content, settings.tool_input_chars)
        kept_inputs = {b["id"]: b["input"] for b in content if b.get("type") == "tool_use"}
        transcript.event(
            "answer",
            stop_reason=answer.stop_reason,
            content=content,
            usage={"input": answer.usage.input_tokens, "output": answer.usage.output_tokens},
        )
        messages.append({"role": "assistant", "content": content})
        uses = [b for b in answer.content if b.type == "tool_use"]
        if not uses:
            nudges += 1
            if nudges > 1:
                raise RoleError(f"the model ended without calling {SUBMIT} (twice)")
            messages.append(
                {"role": "user", "content": f"Use the tools; finish by calling `{SUBMIT}`."}
            )
            continue
        results, final = [], None
        for use in uses:
            if use.name == SUBMIT:
                try:
                    if use.id in omitted:
                        raise ValueError(f"the answer's input is {omitted[use.id]}")
                    final = output.model_validate(use.input)
                    if accept is not None:
                        accept(final)
                    text, is_error = "accepted", False
                except (ValidationError, ValueError) as exc:
                    final = None
                    invalid_answers += 1
                    error = str(exc)
                    transcript.event("invalid-answer", count=invalid_answers, error=error)
                    if invalid_answers > 1:
                        raise RoleError(
                            f"the answer did not validate after one re-ask: {error.splitlines()[0]}"
                        ) from None
                    text = (
                        f"Your answer does not match the schema; fix it and submit again:\n{error}"
                    )
                    is_error = True
            elif use.id in omitted and not isinstance(use.input, dict):
                text, is_error = (
                    f"bad arguments for {use.name}: its input is {omitted[use.id]}",
                    True,
                )
                transcript.event("tool", name=use.name, input=None, result=text, is_error=True)
            else:
                started = time.monotonic()
                text, is_error = tools.call(use.name, use.input)
                transcript.event(
                    "tool",
                    name=use.name,
                    input=kept_inputs.get(use.id, use.input),
                    result=text,
                    is_error=is_error,
                    seconds=round(time.monotonic() - started, 3),
                )
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": use.id,
                    "content": text,
                    "is_error": is_error,
                }
            )
        if final is not None:
            transcript.event("submitted", answer=json.loads(final.model_dump_json()))
            return final
        messages.append({"role": "user", "content": results})
    raise RoleError(f"no answer within {settings.max_turns} turns")
