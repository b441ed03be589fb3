"""The verdict on one candidate: a closed status per workload and overall, never -1, inf or a bool."""

from __future__ import annotations

import math
from enum import StrEnum

from pydantic import BaseModel, Field, computed_field, model_validator


class Status(StrEnum):
    """A check's verdict. A StrEnum: written, formatted or compared, it is its word."""

    PASSED = "PASSED"
    COMPILE_ERROR = "COMPILE_ERROR"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    TIMEOUT = "TIMEOUT"
    CRASHED = "CRASHED"
    FLAGGED = "FLAGGED"
    # The harness itself failed (it crashed, or the frozen baseline would not run beside the
    # candidate): says nothing about the candidate, is never cached, and is checked again.
    HARNESS_ERROR = "HARNESS_ERROR"


class Timing(BaseModel):
    """Statistics of a fixed, recorded number of timed samples (milliseconds)."""

    clock: str  # "cuda_event", "hip_event" or "host"
    sample_count: int
    median_ms: float
    min_ms: float
    max_ms: float
    spread_ms: float  # interquartile range of the samples
    samples_ms: list[float]
    wall_ms_per_call: float | None = None  # the judge's own wall-clock cross-check
    wall_host_ms_per_call: float | None = None  # ... and the host's time to queue a call there
    # Diagnostics the candidate's process reported per sample (not used to judge): the SM clock
    # after the sample (NVIDIA only) and how long the device may have waited on the host.
    sm_clock_mhz: list[int | None] = Field(default_factory=list)
    host_gap_ms: list[float] = Field(default_factory=list)
    # The host's time to queue one call (median): beside the device time, not ranked on.
    host_call_ms: float | None = None
    # Samples in which the device reached the start event before the host had queued the call,
    # even behind the longest gate (the call waits on the host, e.g. it synchronises itself):
    # those samples include host time.
    host_bound_samples: int = 0
    # Per sample: the gate's flushes ahead of the start event and the time it took beyond the
    # same gate run alone right after (charged to the sample when beyond the gate's noise).
    gate_flushes: list[int] = Field(default_factory=list)
    gate_excess_ms: list[float] = Field(default_factory=list)
    # Per sample: how long the call's work on any stream ran past its end event (the device
    # trace's overhang), added to the sample: work left running on a stream of its own.
    overhang_ms: list[float] = Field(default_factory=list)
    # The judge's own clock (scripts/judge_clock.py): the shortest time from dealing a sample's
    # inputs to receiving its outputs' projections; the harness's part of it in this process
    # (its least, and how far it ranged); for a candidate, the frozen baseline's part and
    # range it was judged with, and the least median sample those allow (None: not judged).
    judge_span_ms: float | None = None
    judge_overhead_ms: float | None = None
    judge_noise_ms: float | None = None
    baseline_overhead_ms: float | None = None
    baseline_noise_ms: float | None = None
    clock_least_ms: float | None = None


class TorchWork(BaseModel):
    """Per checked call (after the first that launched Triton): the elements of the call's
    inputs, and the elements each aten compute op read outside its Triton launches
    (scripts/torch_work.py). Reported by the candidate's process."""

    inputs: int = 0
    torch_read: dict[str, int] = Field(default_factory=dict)

    @property
    def share(self) -> float:
        """Elements torch compute read, over the call's input elements."""
        return sum(self.torch_read.values()) / max(self.inputs, 1)


class WorkloadVerdict(BaseModel):
    workload: str
    status: Status
    reason: str | None = None
    max_rel_error: float | None = None
    tolerance: float | None = None
    timing: Timing | None = None
    # The denominator of `speedup`: the frozen baseline's median, the same for every candidate.
    baseline_ms: float | None = None
    speedup: float | None = None
    # The frozen baseline timed again in this check, in its own process just before the
    # candidate (re-timed once when it drifted): a drift detector, never a denominator. A move
    # from the frozen figure beyond both spreads is named in `drift`, and the ranking flags it.
    baseline_timing: Timing | None = None
    frozen_baseline_ms: float | None = None
    drift: str | None = None
    checked_only: bool = False  # a size the user did not list: correctness only, never timed
    # Time inside the candidate's calls of this workload: its first calls (where it compiles,
    # or recompiles for a new size), trials and timed samples. Diagnostics, never judged.
    candidate_seconds: float | None = None
    # The Triton kernels (function names) its checked calls launched: a Triton lane ranks only
    # candidates that launched one (tasks/check/language_rule.py). Reported by the candidate's process.
    triton_kernels: list[str] = Field(default_factory=list)
    # The functions of its own compiled extensions (load_inline / load modules, hip-python
    # launches) those calls ran: a CUDA or HIP lane ranks only candidates that ran one.
    extension_calls: list[str] = Field(default_factory=list)
    # The torch work those calls did beside their Triton kernels (None: not observed).
    torch_work: TorchWork | None = None
    # On a device: the timed calls' device time (us) per kernel name (copies and fills by
    # kind), from the profiler's trace (scripts/stream_audit.py). None: no device trace.
    device_us: dict[str, float] | None = None

    @model_validator(mode="after")
    def _fields_match_status(self) -> WorkloadVerdict:
        if self.checked_only and (self.timing or self.speedup is not None):
            raise ValueError("a checked-only workload carries no timing and no speedup")
        if self.status is Status.PASSED:
            if self.timing is None and not self.checked_only:
                raise ValueError("a PASSED workload carries its timing")
        elif not self.reason:
            raise ValueError(f"a {self.status.value} workload carries a reason")
        return self


class Verdict(BaseModel):
    candidate: str
    oracle_sha256: str
    device: str
    status: Status
    reason: str | None = None
    workloads: list[WorkloadVerdict] = Field(default_factory=list)
    speedup: float | None = None  # geometric mean over workloads, PASSED only
    output_tail: str = ""
    harness_seconds: float | None = None  # the harness's own cost, outside timed runs
    candidate_seconds: float | None = None  # time inside the candidate: loading it and its calls
    # Where a check's time went, in the judge: the baseline's run beside the candidate, the
    # candidate's process (its own time included), the reference and comparisons after it.
    harness_phases: dict[str, float] = Field(default_factory=dict)
    flush_bytes: int | None = None  # the cache flush before each timed call, as the child wrote it

    @model_validator(mode="after")
    def _overall_is_consistent(self) -> Verdict:
        if self.status is Status.PASSED:
            bad = [w.workload for w in self.workloads if w.status is not Status.PASSED]
            if bad or not self.workloads:
                raise ValueError(f"overall PASSED but workloads {bad or 'none'} did not pass")
        elif not self.reason:
            raise ValueError(f"a {self.status.value} verdict carries a reason")
        return self

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def triton_kernels(self) -> list[str]:
        """Every Triton kernel its checked calls launched, over all workloads."""
        return sorted({k for w in self.workloads for k in w.triton_kernels})

    @property
    def extension_calls(self) -> list[str]:
        """Every function of its own compiled extensions its checked calls ran."""
        return sorted({k for w in self.workloads for k in w.extension_calls})

    @computed_field
    @property
    def sizes_checked(self) -> list[str]:
        """The correctness-only workloads: sizes the user did not list, checked untimed."""
        return [w.workload for w in self.workloads if w.checked_only]


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))
