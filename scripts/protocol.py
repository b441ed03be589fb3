"""What crosses the harness's process boundaries, as JSON validated by pydantic.

check (orchestrator) --JudgeRequest--> judge --ChildRequest--> child (the candidate's process)
child --ChildWorkload files + marker lines--> judge --Verdict--> check

Everything the child writes is untrusted: it is validated here and can only make a verdict worse
(a child never reports PASSED; the judge decides that from data it checks itself).
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.scripts.verdict import Status

DEFAULT_TRIALS = 3
DEFAULT_WARMUP = 10
DEFAULT_SAMPLES = 30
DEFAULT_WALL_BLOCKS = 5
DEFAULT_CHECKED_SAMPLES = 4  # timed calls whose projections the judge recomputes


class JudgeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task_dir: str
    candidate: str | None  # None: the frozen baseline itself (while freezing)
    freezing: bool = False  # the task directory is a staging directory without a manifest yet
    candidate_env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(gt=0)
    trials: int = Field(default=DEFAULT_TRIALS, ge=1)
    warmup: int = Field(default=DEFAULT_WARMUP, ge=0)
    samples: int = Field(default=DEFAULT_SAMPLES, ge=1)
    wall_blocks: int = Field(default=DEFAULT_WALL_BLOCKS, ge=1)
    checked_samples: int = Field(default=DEFAULT_CHECKED_SAMPLES, ge=1)
    # Time the frozen baseline in this check too, just before the candidate: the speedup is
    # then the ratio of two runs under the same conditions, not of runs hours apart.
    side_by_side: bool = True
    cache_dir: str | None = None  # the compilers' caches for this candidate (see judge)
    # ... and for the frozen baseline's run beside it, kept across a run's checks (its sources
    # never change): without it, a CUDA or Triton baseline is built again in every check.
    baseline_cache_dir: str | None = None
    # Only the calls that compile (each workload's first calls, `Runner.first_calls`), to fill
    # `cache_dir` ahead of the check: nothing timed, nothing judged; the answer is `Precompiled`.
    precompile: bool = False
    # Correctness only (the model's quick check): the small workloads (`judge.quick_spec`), one
    # trial each, nothing timed, no baseline beside it; the verdict has no speedup.
    quick: bool = False


class WorkloadSeeds(BaseModel):
    """The judge's draws for one workload. The child's copy has no `sample_seeds`: it gets
    `dealt` timed samples, each seed dealt by the judge when the child is ready for it."""

    model_config = ConfigDict(extra="forbid")
    name: str
    trial_seeds: list[int]
    warmup_seed: int
    sample_seeds: list[int]
    wall_seed: int
    projection_seed: int
    dealt: int = 0

    def for_child(self) -> WorkloadSeeds:
        return self.model_copy(update={"sample_seeds": [], "dealt": len(self.sample_seeds)})


# Dealt samples: before timed sample k of workload i the child sends `ready i k` on the marker
# channel and waits; the judge answers on a pipe of its own with the sample's input seed (8
# bytes, little-endian) and notes its own clock. After the call the child sends
# `done i k [[projections of output 0], ...]`, stamped by the kernel when sent. So everything
# sample k needs (its inputs are made from the seed, its outputs' projections are checked) lies
# between two instants the candidate cannot move: the judge's answer and the `done` line.
def done_line(index: int, k: int, projections: list[list[float]]) -> str:
    return f"done {index} {k} {json.dumps(projections)}"


class ChildRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    spec: OpSpec  # the full op spec; the child reads its inputs and workloads from it
    src_dir: str
    candidate: str | None
    results: str
    warmup: int
    wall_blocks: int
    workloads: list[WorkloadSeeds]
    precompile: bool = False
    checked_only: bool = False  # every workload as a correctness-only size (a quick check)


class ChildError(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: Status
    reason: str

    @field_validator("status")
    @classmethod
    def _not_passed(cls, v: Status) -> Status:
        if v is Status.PASSED:
            raise ValueError("a child reports failures only")
        return v


class SavedTensor(BaseModel):
    """One output written by scripts/tensorfile.py: raw bytes in `file`, read back as this."""

    model_config = ConfigDict(extra="forbid")
    file: str
    shape: list[int]
    dtype: str


class ChildWorkload(BaseModel):
    """One workload as the child saw it: the trial output files, the samples, the projections."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")  # NaN stays NaN
    workload: str
    error: ChildError | None = None
    trials: list[list[SavedTensor]] = Field(default_factory=list)  # each trial's outputs
    structure: str | None = None  # what the first trial returned (scripts/compare.structure)
    samples_ms: list[float] = Field(default_factory=list)
    host_ms: list[float] = Field(default_factory=list)
    projections: list[list[list[float]]] = Field(default_factory=list)  # sample, output, j
    sm_clock_mhz: list[int | None] = Field(default_factory=list)  # diagnostics, per sample
    host_gap_ms: list[float] = Field(default_factory=list)
    host_call_ms: list[float] = Field(default_factory=list)  # the host's time to queue the call
    gate_flushes: list[int] = Field(default_factory=list)  # the gate ahead of each start event
    gate_ms: list[float] = Field(default_factory=list)  # that gate's device time, per sample
    gate_ref_ms: list[float] = Field(default_factory=list)  # the same gate alone, right after
    gate_excess_ms: list[float] = Field(default_factory=list)  # charged to the sample
    # added to each sample: how long the call's work on any stream ran past the marker after
    # its end event, on the device's clock (scripts/stream_audit.py)
    overhang_ms: list[float] = Field(default_factory=list)
    host_bound: int = 0  # samples whose start event fired before the call was queued
    wall_calls: int = 0
    candidate_s: float = 0.0  # time spent inside the candidate's calls
    # which kernels ran: not here but on the marker channel (scripts/launches.py: records)


class ChildHello(BaseModel):
    model_config = ConfigDict(extra="forbid")
    device: str
    clock: str
    load_s: float = 0.0
    flush_bytes: int = 0  # written before each timed call (twice the last-level cache)


class Precompiled(BaseModel):
    """A precompile's outcome: how long the candidate's process took, and the failure it met
    (None: it made every first call). Advice for the orchestrator only; the check that follows
    judges the candidate from scratch."""

    model_config = ConfigDict(extra="forbid")
    seconds: float
    status: Status | None = None
    reason: str | None = None


HELLO = "hello.json"
FATAL = "fatal.json"


def workload_file(index: int) -> str:
    return f"wl{index}.json"


def output_file(index: int, trial: int, output: int) -> str:
    return f"wl{index}_trial{trial}_out{output}.bin"
