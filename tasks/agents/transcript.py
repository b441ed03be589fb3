"""Transcripts and cost: every prompt, model answer, tool call and result, tokens and dollars.

One `Transcript` per role call writes `<lane>/transcripts/NN-<role>.jsonl` as it goes (a crash
leaves what happened so far); the lane's `Ledger` sums the calls and stops the lane when a token,
dollar or time budget is spent. `summary.json` in the same directory is what the Prefect
artifact shows. The key is never written: the SDK's request headers are not recorded, and every
text is passed through `redact` first.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from pydantic import BaseModel, Field

from kernel_bakeoff.tasks.agents.settings import AgentSettings, take_key
from kernel_bakeoff.tasks.run.directory import now, read_json, write_json


def redact(text: str) -> str:
    key = take_key()
    return text.replace(key, "[redacted]") if key and len(key) >= 8 else text


class CallUsage(BaseModel):
    role: str
    driver: str
    model: str
    transcript: str
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    dollars: float | None = 0.0
    seconds: float = 0.0
    retries: int = 0
    outcome: str = "running"  # answered | failed: <reason>


class LaneUsage(BaseModel):
    calls: list[CallUsage] = Field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    dollars: float | None = 0.0
    seconds: float = 0.0


class BudgetSpent(Exception):
    """The lane's token, dollar or time budget is spent: no new model call starts."""


class Ledger:
    """Usage of every role call of one lane, against the lane's budgets."""

    def __init__(self, directory: Path, settings: AgentSettings):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.settings = settings
        earlier = read_json(self.directory / "summary.json")  # a later role call of the lane
        self.usage = LaneUsage.model_validate(earlier) if earlier else LaneUsage()
        self.started = time.monotonic() - self.usage.seconds
        self._lock = threading.Lock()
        self.halted: str | None = None  # `halt`: every conversation of the lane stops

    def halt(self, reason: str) -> None:
        """Stop every conversation of the lane at its next turn (author mode's first correct
        candidate, when the lane is told to stop there)."""
        self.halted = self.halted or reason

    def spent(self) -> str | None:
        """Why no new model call may start, or None."""
        if self.halted:
            return self.halted
        s, u = self.settings, self.usage
        if u.input_tokens + u.output_tokens >= s.max_lane_tokens:
            return f"token budget spent ({u.input_tokens + u.output_tokens} >= {s.max_lane_tokens})"
        if u.dollars is not None and u.dollars >= s.max_lane_dollars:
            return f"dollar budget spent (${u.dollars:.2f} >= ${s.max_lane_dollars:.2f})"
        if time.monotonic() - self.started >= s.max_lane_seconds:
            return f"time budget spent ({s.max_lane_seconds:g} s)"
        return None

    def open(self, role: str) -> Transcript:
        with self._lock:
            index = len(self.usage.calls) + 1
            path = self.directory / f"{index:02d}-{role}.jsonl"
            call = CallUsage(
                role=role,
                driver=self.settings.driver,
                model=self.settings.model,
                transcript=str(path),
            )
            self.usage.calls.append(call)
        return Transcript(path, call, self)

    def add(self, call: CallUsage, input_tokens: int, output_tokens: int) -> None:
        with self._lock:
            call.turns += 1
            call.input_tokens += input_tokens
            call.output_tokens += output_tokens
            cost = self.settings.cost(input_tokens, output_tokens)
            for holder in (call, self.usage):
                holder.dollars = (
                    None if cost is None or holder.dollars is None else holder.dollars + cost
                )
            self.usage.input_tokens += input_tokens
            self.usage.output_tokens += output_tokens
            self.save()

    def save(self) -> None:
        self.usage.seconds = round(time.monotonic() - self.started, 3)
        write_json(self.directory / "summary.json", self.usage)

    def markdown(self) -> str:
        u = self.usage
        dollars = "unpriced" if u.dollars is None else f"${u.dollars:.4f}"
        lines = [
            f"Model calls: {len(u.calls)}; tokens in {u.input_tokens}, out {u.output_tokens}; "
            f"cost {dollars}; {u.seconds:.1f} s",
            "",
            "| # | role | driver | model | turns | tokens in | tokens out | cost | outcome |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for i, c in enumerate(u.calls, 1):
            cost = "unpriced" if c.dollars is None else f"${c.dollars:.4f}"
            outcome = c.outcome.replace("|", "/")
            lines.append(
                f"| {i} | {c.role} | {c.driver} | {c.model} | {c.turns} | {c.input_tokens} | "
                f"{c.output_tokens} | {cost} | {outcome} |"
            )
        return "\n".join(lines)


class Transcript:
    def __init__(self, path: Path, call: CallUsage, ledger: Ledger):
        self.path = Path(path)
        self.call = call
        self.ledger = ledger
        self.started = time.monotonic()

    def event(self, kind: str, **data) -> None:
        record = {"at": now().isoformat(), "event": kind, **data}
        line = redact(json.dumps(record, default=str))
        with open(self.path, "a") as f:
            f.write(line + "\n")

    def usage(self, input_tokens: int, output_tokens: int) -> None:
        self.ledger.add(self.call, input_tokens, output_tokens)

    def retried(self) -> None:
        self.call.retries += 1

    def close(self, outcome: str) -> None:
        self.call.outcome = redact(outcome)
        self.call.seconds = round(time.monotonic() - self.started, 3)
        self.event("end", outcome=self.call.outcome, usage=self.call.model_dump())
        self.ledger.save()


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
