"""One model conversation of a role: its transcript opened, the driver run, the transcript closed.

Every model-driven role talks through `talk` (or, where it needs the open transcript, the
`transcript_of` block), so a transcript always ends with how the call ended, whatever raised:
"answered", "stopped: <why>" when the lane's budget or halt stopped it, "failed: <reason>".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from kernel_bakeoff.tasks.agents.drivers import RoleError, Tools, driver_for
from kernel_bakeoff.tasks.agents.settings import AgentSettings
from kernel_bakeoff.tasks.agents.transcript import BudgetSpent, Ledger, Transcript

SYSTEM = (
    "You are a role agent of kernel-bakeoff, a system that makes GPU kernels faster and only "
    "believes numbers its harness measured. Work only through the tools you are given, only "
    "inside the lane workspace. Never time anything yourself and never report a number the "
    "harness did not give you: cite the receipt of every candidate you name. Finish every role "
    "call by calling `submit` with an answer that matches its schema."
)


class NoTools:
    """The judgment roles read what their prompt holds and call nothing but `submit`."""

    def schemas(self) -> list[dict]:
        return []

    def call(self, name: str, arguments: dict) -> tuple[str, bool]:
        return f"unknown tool {name!r}", True


def ending(exc: BaseException) -> str:
    """How a transcript whose conversation raised `exc` is closed."""
    if isinstance(exc, BudgetSpent):
        return f"stopped: {exc}"
    reason = str(exc) if isinstance(exc, RoleError) else f"{type(exc).__name__}: {exc}"
    return f"failed: {reason}"


@contextmanager
def transcript_of(ledger: Ledger, name: str) -> Iterator[Transcript]:
    """A transcript open for the block; closed with the block's outcome, the exception re-raised."""
    transcript = ledger.open(name)
    try:
        yield transcript
    except Exception as exc:
        transcript.close(ending(exc))
        raise
    transcript.close("answered")


def talk(
    settings: AgentSettings,
    ledger: Ledger,
    name: str,
    *,
    prompt: str,
    output: type[BaseModel],
    tools: Tools | None = None,
    remaining: Callable[[], float] | None = None,
    accept: Callable[[BaseModel], None] | None = None,
) -> BaseModel:
    """One conversation `name` through the configured driver, to a validated `output`."""
    with transcript_of(ledger, name) as transcript:
        return driver_for(settings).converse(
            settings=settings,
            transcript=transcript,
            system=SYSTEM,
            prompt=prompt,
            tools=tools or NoTools(),
            output=output,
            remaining=remaining or (lambda: float("inf")),
            accept=accept,
        )


def answer_request(request, output: type[BaseModel], name: str, accept=None) -> BaseModel:
    """A tool-less conversation on a role request's rendered prompt (the judgment roles), its
    transcript beside the role's records."""
    settings = AgentSettings.from_env()
    ledger = Ledger(Path(request.record_dir).parent / "transcripts", settings)
    return talk(
        settings,
        ledger,
        name,
        prompt=request.prompt,
        output=output,
        remaining=request.deadline.remaining,
        accept=accept,
    )
