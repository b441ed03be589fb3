"""Figures from verdicts: median ms per workload and their geometric mean (what the search's
history keeps), and whether a candidate beats the frozen baseline by more than its measured
spread. Which candidate is faster is decided by the one measure of fast, the speedup against
the frozen baseline (tasks/check/judgement.py: `speed`)."""

from __future__ import annotations

import math

from kernel_bakeoff.scripts.verdict import Verdict, geomean


def workload_ms(verdict: Verdict) -> dict[str, float]:
    return {w.workload: w.timing.median_ms for w in verdict.workloads if w.timing is not None}


def geomean_ms(verdict: Verdict) -> float | None:
    """Geometric mean of the median times over workloads; None unless the verdict passed.

    The search's history keeps this, not the speedup: it is keyed by the oracle, whose id
    leaves out the baseline's timings, so speedups from two freezes of one oracle divide by
    different figures while ms compare."""
    if not verdict.passed:
        return None
    return geomean(list(workload_ms(verdict).values()))


def baseline_ms(verdict: Verdict) -> dict[str, float]:
    return {w.workload: w.baseline_ms for w in verdict.workloads if w.baseline_ms}


def speedup(verdict: Verdict, baseline: dict[str, float]) -> float | None:
    if not verdict.passed:
        return None
    ms = workload_ms(verdict)
    ratios = [baseline[k] / v for k, v in ms.items() if k in baseline and v > 0]
    return geomean(ratios) if ratios and len(ratios) == len(ms) else None


def relative_spread(verdict: Verdict) -> float:
    rel = [
        w.timing.spread_ms / w.timing.median_ms
        for w in verdict.workloads
        if w.timing is not None and w.timing.median_ms > 0
    ]
    return math.exp(sum(math.log1p(r) for r in rel) / len(rel)) - 1 if rel else 0.0


def beats(verdict: Verdict, baseline: dict[str, float]) -> bool:
    """Faster than the baseline by more than the candidate's own relative spread."""
    s = speedup(verdict, baseline)
    return s is not None and s > 1.0 + relative_spread(verdict)
