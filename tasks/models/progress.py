"""Run and lane progress (`RUN/progress.json`, `RUN/lanes/<key>/progress.json`), typed.

The flows write them as they go and `bakeoff run`'s display (flows/live.py) and a resumed run
read them, each through these models (tasks/run/directory.py reads and writes the files). Every
field is optional: a file is written field by field as a phase or a lane moves on, and one left
by an older run may lack any of them. Unknown fields are refused, so a writer cannot add one
that no reader knows of.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class RunProgress(BaseModel):
    model_config = ConfigDict(extra="forbid")

    phase: str | None = None  # starting, freeze, discover, lanes, report, done, round i/n
    updated: datetime | None = None
    phase_started: dict[str, datetime] = Field(default_factory=dict)  # this attempt's phases
    attempt: str | None = None  # the flow run that wrote it
    mode: str | None = None
    lanes: list[str] = Field(default_factory=list)  # lane keys of this attempt
    spec: str | None = None  # what oracle_freezer did, when it wrote the input's spec
    report: str | None = None  # where the finished report is
    previous: RunProgress | None = None  # how the run before this one ended (`bakeoff run`)

    @property
    def unfinished(self) -> bool:
        """An earlier run that stopped before its report (crashed, cancelled, interrupted)."""
        return self.phase not in (None, "done")


class LaneProgress(BaseModel):
    """A lane's (or Discover's) progress: its state and how far its checks have come."""

    model_config = ConfigDict(extra="forbid")

    key: str | None = None
    language: str | None = None
    mode: str | None = None
    state: str | None = None  # waiting, running, reviewing, reused, completed, cut, failed, ...
    reason: str | None = None  # why it was skipped or failed
    budget: int | None = None
    evaluated: int | None = None  # checks finished
    current: str | None = None  # Discover: the candidate under check ("" between checks)
    best_speedup: float | None = None
    attempt: str | None = None  # the run attempt that wrote it (the display skips others')
    device: str | None = None
    host: str | None = None
    updated: datetime | None = None
