"""Models of a bake-off run: the request, lanes, leases, reviews, the ranked report.

These are what flows hand each other and what lands in the run directory as JSON; nothing here
imports Prefect, so the CLI can validate a request before Prefect starts.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.models.plan import CandidateResult, DiscoverPlan, LaneMode

BakeoffMode = Literal["optimize", "author", "bakeoff"]
GpuMode = Literal["pool", "pin"]
Dispatch = Literal["local", "deployment"]


class PoolConfig(BaseModel):
    """Which devices a lane may lease: given ids, or detected on the host that runs the lane."""

    gpu_ids: list[str] | None = None  # None: detect (visible-devices variables, torch, CPU slots)
    gpu_mode: GpuMode = "pool"
    cpu_slots: int | None = None  # CPU-only hosts: how many lanes run at once
    lock_dir: str | None = None  # None: $BAKEOFF_LOCK_DIR or a per-user directory under /tmp


class LaneSpec(BaseModel):
    """One lane of a bake-off, after de-duplication on language + mode."""

    key: str  # the language, or `<language>_<mode>` when that language has two lanes
    language: str
    mode: LaneMode


class LaneConfig(BaseModel):
    """Everything a lane needs; all of it but `attempt` and `pin_index` goes into its cache key."""

    run_dir: str
    task_dir: str
    oracle_sha256: str
    lane: LaneSpec
    budget: int = Field(ge=1)
    lane_timeout_s: float = 3600.0
    check_timeout_s: float = 300.0
    samples: int | None = None
    strategy: str = "auto"
    agents: dict[str, str] = Field(default_factory=dict)  # role -> "module:callable" responder
    agent_timeout_s: float | None = None  # per attempt of the reviewer (and model-backed roles)
    agent_retries: int | None = None
    pool: PoolConfig = Field(default_factory=PoolConfig)
    pin_index: int | None = None  # gpu_mode=pin: this lane takes device ids[pin_index % n]
    attempt: str = ""  # id of the bake-off invocation that started this lane
    # A campaign round's start (flows/campaign.py): the best variant so far (tasks.campaign
    # .Variant as a dict, or none yet) and `history_dir`, the search history shared by rounds.
    seed: dict | None = None
    # a model lane writes its own learned card; in bakeoff mode the bake-off curates one instead
    learn: Literal["lane", "bakeoff"] = "lane"


class Lease(BaseModel):
    """A device held by one lane between `start` and `end`."""

    device: str
    env: dict[str, str]
    host: str
    pid: int
    start: datetime
    end: datetime | None = None


class Review(BaseModel):
    """The reviewer's decision on the best candidate of a lane (or of Discover)."""

    candidate: str | None  # None: nothing passed, nothing to review
    decision: Literal["accepted", "flagged", "nothing-to-review"]
    reasons: list[str] = Field(default_factory=list)
    flagged: dict[str, list[str]] = Field(default_factory=dict)  # faster candidates passed over


class ClaimNote(BaseModel):
    """A model's claim the record did not bear out: ignored (no receipt matched the record) or
    corrected (its receipt matched, its number was not the verdict's at the precision shown)."""

    round: int
    candidate: str
    claimed: float | None = None
    measured: float | None = None  # the record's figure, where a receipt matched
    outcome: Literal["ignored", "corrected"]
    why: str


class SearchOutcome(BaseModel):
    """What a lane's optimizer or author role answers: every candidate it had checked."""

    candidates: list[CandidateResult] = Field(default_factory=list)
    notes: str = ""
    claims: list[ClaimNote] = Field(default_factory=list)  # model lanes: claims not borne out


class LaneResult(BaseModel):
    key: str
    language: str
    mode: LaneMode
    # cut: --lane-timeout stopped it early; skipped: nothing to run here, and why
    status: Literal["completed", "cut", "failed", "skipped"]
    reason: str = ""
    cache_key: str
    attempt: str = ""
    reused: bool = False  # taken from an earlier run with the same cache key
    lease: Lease | None = None
    started: datetime | None = None
    finished: datetime | None = None
    candidates: list[CandidateResult] = Field(default_factory=list)
    review: Review | None = None
    lane_dir: str = ""
    claims: list[ClaimNote] = Field(default_factory=list)  # the model's claims not borne out


class Standing(StrEnum):
    """Where a candidate that passed its check stands in the ranking (tasks/report/ranking.py)."""

    WINNER = "winner"
    ELIGIBLE = "eligible"  # may win: the reviewer accepted it and it beats the spread
    PASSED = "passed"  # not the best of its lane, so not reviewed
    WITHIN_SPREAD = "within-spread"  # faster, but not beyond the measured spread
    SLOWER = "slower"  # below 1x
    FLAGGED = "flagged"  # the reviewer's doubts, or a baseline that drifted beside it
    NOT_COMPARABLE = "not-comparable"  # interpreted against native: the ratio means nothing
    BASELINE = "baseline"  # the input re-measured by Discover; never a winner
    LANE_FAILED = "lane-failed"  # passed, but its lane failed


class CandidateRow(BaseModel):
    """One line of the ranking table."""

    rank: int
    name: str
    language: str
    mode: str
    source: str  # lane key, or "discover"
    # other sources that proposed the same candidate: its one check, shared (tasks/check/evaluate.py)
    also_from: list[str] = Field(default_factory=list)
    # A candidate that passed its check: where it stands. Else the check's verdict (CRASHED,
    # TIMEOUT, ...), which says why it is not ranked. Either way the word a report shows.
    status: Standing | Status
    detail: str = ""
    # Over the frozen baseline, the one denominator: baseline_ms[w] / median_ms[w] is speedups[w]
    speedup: float | None = None
    speedups: dict[str, float | None] = Field(default_factory=dict)
    median_ms: dict[str, float | None] = Field(default_factory=dict)  # the candidate's own
    # The frozen baseline timed beside it in its check: detects drift, never divides
    baseline_beside_ms: dict[str, float | None] = Field(default_factory=dict)
    margin: float | None = None  # relative spread the speedup had to beat (bar: 1 + margin)
    spread: float | None = None  # the candidate's own relative spread, mean over workloads
    comparable: bool = True  # False: interpreted against native, the speedup means nothing
    path: str = ""
    # where the candidate itself came from: library and version, template and configuration,
    # compile mode (the backend's own words, CandidateRef.origin)
    built_from: str = ""

    def origin(self) -> str:
        """Who proposed it: its source, then any other that proposed the same candidate."""
        return ", ".join([self.source, *self.also_from])


class Report(BaseModel):
    kernel_path: str
    kernel: str
    mode: BakeoffMode
    run_dir: str
    task_dir: str
    oracle_sha256: str
    baseline_ms: dict[str, float]
    rows: list[CandidateRow]
    winner: CandidateRow | None = None
    lanes: list[LaneResult] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    report_path: str = ""
    html_path: str = ""  # report.html beside report.md (tasks/report/html.py)
    # fingerprint (device, arch, driver, torch, triton), clock, interpreted, baseline_spread
    measurement: dict = Field(default_factory=dict)
    # the reporter's prose (tasks/agents/roles/reporter.py), and its sentences dropped for quoting
    # figures the ranked table does not hold
    prose: str = ""
    prose_dropped: list[str] = Field(default_factory=list)

    def frozen_task(self) -> FrozenTask:
        """The frozen task this report was ranked on, opened and verified to be that oracle
        still (BadInput, in one line, for a task frozen again since)."""
        return FrozenTask.open(self.task_dir, self.oracle_sha256)

    def judged(self) -> list[CandidateRow]:
        """The candidates the harness gave a verdict on: not the baseline, not its own faults."""
        return [
            r for r in self.rows if r.mode != "baseline" and r.status is not Status.HARNESS_ERROR
        ]

    def noted_claims(self) -> list[tuple[str, ClaimNote]]:
        """(lane key, claim) for every model claim that was ignored or corrected."""
        return [(lane.key, c) for lane in self.lanes for c in lane.claims]

    def timed_beside(self) -> list[CandidateRow]:
        """The rows whose check timed the frozen baseline beside the candidate (drift detector)."""
        return [r for r in self.rows if any(v is not None for v in r.baseline_beside_ms.values())]

    def why_nothing_was_judged(self) -> str:
        """With no judged candidate, "no winner" would claim a contest that never took place:
        what stopped each lane, and the run's warnings, in one line."""
        said = [
            f"lane {lane.key}: {lane.status}" + (f": {lane.reason}" if lane.reason else "")
            for lane in self.lanes
        ]
        return "; ".join(said + self.warnings) or "no lane ran"


class DiscoverOutcome(BaseModel):
    plan: DiscoverPlan
    review: Review | None = None
    cache_key: str = ""
    reused: bool = False
