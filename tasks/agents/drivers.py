"""What a model driver is: one role conversation, run to a validated answer.

Two drivers implement `Driver`: the Messages API (tasks/agents/messages.py) and the Claude Code
CLI (tasks/agents/claude_code.py); `AgentSettings.driver` picks one. A new driver is a module
with a `converse` function of this signature, named in `DRIVERS` (and in the settings' Literal).
Drivers raise `RoleError` when a conversation ends without a valid answer, and `BudgetSpent`
(tasks/agents/transcript.py) when the lane's budget stops it; API faults are retried inside the
driver and nowhere else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel

if TYPE_CHECKING:
    from kernel_bakeoff.tasks.agents.settings import AgentSettings
    from kernel_bakeoff.tasks.agents.transcript import Transcript

# modules, imported on first use: the Messages driver loads the SDK, the CLI driver a proxy
DRIVERS = {
    "messages": "kernel_bakeoff.tasks.agents.messages",
    "claude-code": "kernel_bakeoff.tasks.agents.claude_code",
}


class RoleError(Exception):
    """A role call that ended without a valid answer; the message is the reason."""


class Tools(Protocol):
    """The tools a conversation may call (LaneTools, or none): schemas to offer, calls to run."""

    def schemas(self) -> list[dict]: ...

    def call(self, name: str, arguments: dict) -> tuple[str, bool]: ...


class Driver(Protocol):
    def converse(
        self,
        *,
        settings: AgentSettings,
        transcript: Transcript,
        system: str,
        prompt: str,
        tools: Tools,
        output: type[BaseModel],
        remaining: Callable[[], float] = ...,
        accept: Callable[[BaseModel], None] | None = None,
    ) -> BaseModel: ...


def driver_for(settings: AgentSettings) -> Driver:
    return importlib.import_module(DRIVERS[settings.driver])  # type: ignore[return-value]
