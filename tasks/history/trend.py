"""The nightly comparison: tonight's re-timing against the last accepted result, by a rule that
knows about noise, and the trend of a kernel over its history.

Rule, per workload: a regression when tonight's median is slower than the last accepted
median by more than both spreads together (the interquartile ranges of the two measurements):
    new.median - old.median > old.spread + new.spread
Within them it is noise, not a regression. Each check also times the frozen baseline beside the
candidate, just before it; where both checks did, tonight's median is first put on the accepted
check's scale (times old.baseline / new.baseline) and the two baselines' relative spreads are
added to the allowance: a host or device that is slower or faster tonight as a whole moves both
and is not the kernel's regression (a shared CPU's speed moved an unchanged winner's time beyond
its spreads between two checks a minute apart). A result that no longer passes its check is a
regression whatever its time. The frozen baseline is also re-timed on its own and compared on
the plain rule: when it slowed too, the device or its software changed, and the summary says so.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from kernel_bakeoff.scripts.verdict import Verdict, WorkloadVerdict, geomean
from kernel_bakeoff.tasks.history.records import CandidateOut, RunOut, TimingOut


class WorkloadChange(BaseModel):
    workload: str
    old_ms: float | None
    old_spread_ms: float | None
    new_ms: float | None
    new_spread_ms: float | None
    change: float | None  # new / old - 1
    regressed: bool
    reason: str = ""


def compare(old: CandidateOut, new: Verdict, beside: bool = True) -> list[WorkloadChange]:
    """Tonight's verdict against the accepted result, workload by workload; `beside`: scale by
    the baseline timed beside each (False for the frozen baseline's own re-timing)."""
    before = {t.workload: t for t in old.timings}
    out = []
    for w in new.workloads:
        if w.checked_only:
            continue  # a size checked for correctness only, never timed
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
        slower, allowed, moved = _slowdown(o, w) if beside else _plain(o, w)
        regressed = slower > allowed
        scaled = "" if moved is None else f" (scaled by the baseline beside it: {moved:+.1%})"
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
                    f"{slower:.4g} ms slower{scaled}, beyond both spreads ({allowed:.4g} ms)"
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


def _plain(o: TimingOut, w: WorkloadVerdict) -> tuple[float, float, None]:
    """(ms slower, ms allowed, None): the medians as measured."""
    return w.timing.median_ms - o.median_ms, (o.spread_ms or 0.0) + w.timing.spread_ms, None


def _slowdown(o: TimingOut, w: WorkloadVerdict) -> tuple[float, float, float | None]:
    """(ms slower, ms allowed, the baseline's move) with tonight put on the accepted check's
    scale by the baselines timed beside each; the plain rule where either check lacks one."""
    b = w.baseline_timing
    if b is None or not b.median_ms or not o.baseline_ms:
        return _plain(o, w)
    scale = o.baseline_ms / b.median_ms
    noise = (o.baseline_spread_ms or 0.0) / o.baseline_ms + b.spread_ms / b.median_ms
    slower = w.timing.median_ms * scale - o.median_ms
    allowed = (o.spread_ms or 0.0) + w.timing.spread_ms * scale + o.median_ms * noise
    return slower, allowed, 1 / scale - 1


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
