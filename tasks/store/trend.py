"""The nightly comparison: tonight's re-timing against the last accepted result, by a rule that
knows about noise, and the trend of a kernel over its history.

Rule, per workload: a regression when tonight's median is slower than the last accepted
median by more than both spreads together (the interquartile ranges of the two measurements):
    new.median - old.median > old.spread + new.spread
Within them it is noise, not a regression. A result that no longer passes its check is a
regression whatever its time. The frozen baseline is re-timed beside the winner and its change
is reported with it: when both slowed, the device or its software changed, not the kernel.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from scripts.verdict import Verdict, geomean
from tasks.store.history import CandidateOut, RunOut


class WorkloadChange(BaseModel):
    workload: str
    old_ms: float | None
    old_spread_ms: float | None
    new_ms: float | None
    new_spread_ms: float | None
    change: float | None  # new / old - 1
    regressed: bool
    reason: str = ""


def compare(old: CandidateOut, new: Verdict) -> list[WorkloadChange]:
    before = {t.workload: t for t in old.timings}
    out = []
    for w in new.workloads:
        o = before.get(w.workload)
        t = w.timing
        if o is None or o.median_ms is None:
            out.append(
                WorkloadChange(
                    workload=w.workload,
                    old_ms=None,
                    old_spread_ms=None,
                    new_ms=t.median_ms if t else None,
                    new_spread_ms=t.spread_ms if t else None,
                    change=None,
                    regressed=False,
                    reason="no earlier timing of this workload",
                )
            )
            continue
        if t is None:
            out.append(
                WorkloadChange(
                    workload=w.workload,
                    old_ms=o.median_ms,
                    old_spread_ms=o.spread_ms,
                    new_ms=None,
                    new_spread_ms=None,
                    change=None,
                    regressed=True,
                    reason=f"{w.status.value}: {w.reason or 'no timing'}",
                )
            )
            continue
        allowed = (o.spread_ms or 0.0) + t.spread_ms
        slower = t.median_ms - o.median_ms
        regressed = slower > allowed
        out.append(
            WorkloadChange(
                workload=w.workload,
                old_ms=o.median_ms,
                old_spread_ms=o.spread_ms,
                new_ms=t.median_ms,
                new_spread_ms=t.spread_ms,
                change=t.median_ms / o.median_ms - 1 if o.median_ms else None,
                regressed=regressed,
                reason=(
                    f"{slower:.4g} ms slower, beyond both spreads ({allowed:.4g} ms)"
                    if regressed
                    else "within both spreads"
                    if slower > 0
                    else "not slower"
                ),
            )
        )
    if not new.passed and not any(c.regressed for c in out):
        for c in out:
            c.regressed = True
            c.reason = f"the check no longer passes: {new.status.value}: {new.reason}"
    return out


class KernelTrend(BaseModel):
    kernel: str
    points: list[tuple[str, str, float]] = Field(default_factory=list)  # (when, kind, ms)


def accepted_ms(candidate: CandidateOut) -> float | None:
    """One figure per result: the geometric mean of its median times over workloads."""
    return geomean([t.median_ms for t in candidate.timings if t.median_ms])


def trend(kernel: str, runs: list[RunOut]) -> KernelTrend:
    """The accepted result's time in every recorded run of a kernel, oldest first."""
    points = []
    for run in sorted(runs, key=lambda r: r.recorded_at):
        if run.accepted is not None:
            ms = accepted_ms(run.accepted)
            if ms is not None:
                points.append((run.recorded_at.strftime("%Y-%m-%d %H:%M"), run.kind, ms))
    return KernelTrend(kernel=kernel, points=points)
