"""The model's settings, with their defaults in one place.

`AgentSettings.from_env()` reads `BAKEOFF_AGENT_*` variables over the defaults below. The key
(`ANTHROPIC_API_KEY`) is moved out of `os.environ` the first time it is seen (`take_key`, held in
tasks/run/key.py and named here too), so no subprocess started afterwards (a Prefect server,
a judge, a tool command, a candidate, the Claude Code CLI) can inherit it: it lives only in the
process that calls the API.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, Field

from kernel_bakeoff.tasks.run.key import (  # noqa: F401 (the key's one holder, named here too)
    KEY_VARIABLE,
    NO_MODEL,
    forget_key,
    model_configured,
    take_key,
)

# US dollars per million tokens (input, output), from the public model pages read 2026-12-01
# (platform.claude.com, "Models & pricing"). A model not listed is recorded as unpriced.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-sonnet-5": (2.0, 10.0),
    "claude-sonnet-5-5": (2.0, 10.0),
    "claude-opus-5": (5.0, 25.0),
    "claude-opus-5-5": (4.0, 20.0),
    "claude-opus-4-5": (5.0, 25.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
}


class AgentSettings(BaseModel):
    """Everything a role conversation is bounded by. Budgets are per lane unless named per call."""

    driver: Literal["messages", "claude-code"] = "messages"
    model: str = "claude-sonnet-5"
    max_tokens: int = 16000  # per model answer
    temperature: float | None = None  # None: the model's default (some models refuse others)
    base_url: str | None = None  # None: the SDK's default, or ANTHROPIC_BASE_URL
    api_timeout_s: float = 600.0  # one HTTP request
    api_retries: int = 4  # faults (429, 5xx, timeouts, dropped connections) retried this often
    retry_base_s: float = 2.0  # backoff: base * 2**attempt, capped, or the server's retry-after
    retry_cap_s: float = 60.0
    max_turns: int = 40  # model answers per role call
    max_lane_tokens: int = 2_000_000  # input + output tokens over every call of a lane
    max_lane_dollars: float = 20.0
    max_lane_seconds: float = 3600.0
    per_round: int = 3  # candidates a round may check, when the budget allows
    patience: int = 2  # rounds without improvement before the lane stops
    # conversations per round, each with its own share of the round's checks; 0: from the
    # budget (tasks/agents/explore.py: default_width)
    parallel: int = Field(0, ge=0, le=16)
    stop_at_first_correct: bool = False  # author mode: the first PASSED verdict ends the lane
    max_rounds: int = 8
    quick_checks: int = 20  # correctness-only checks a lane may make, apart from `budget`
    quick_timeout_s: float = 120.0  # one quick check's deadline
    command_timeout_s: float = 120.0  # the run-command tool's deadline
    tool_output_chars: int = 12000  # tool results are cut to this many characters
    tool_input_chars: int = 256_000  # a tool call's input over this is refused and not kept
    claude_code: str = "claude"  # the CLI executable for driver claude-code
    learned_dir: str | None = None  # None: knowledge/learned in the checkout
    prices: dict[str, tuple[float, float]] = Field(default_factory=lambda: dict(PRICES_PER_MTOK))

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> AgentSettings:
        env = os.environ if env is None else env
        values = {}
        for name, field in cls.model_fields.items():
            raw = env.get(f"BAKEOFF_AGENT_{name.upper()}")
            if raw is None or name == "prices":
                continue
            values[name] = None if raw == "" and field.default is None else raw
        if "base_url" not in values and env.get("ANTHROPIC_BASE_URL"):
            values["base_url"] = env["ANTHROPIC_BASE_URL"]
        return cls.model_validate(values)

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        price = self.prices.get(self.model)
        if price is None:
            return None
        return (input_tokens * price[0] + output_tokens * price[1]) / 1e6


def agent_identity() -> str | None:
    """Which model drives the lanes here (None: none), for the lanes' cache keys."""
    if not model_configured():
        return None
    settings = AgentSettings.from_env()
    return f"{settings.driver}:{settings.model}"
