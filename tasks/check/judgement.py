"""One judgement: the one place where a checked candidate's verdict becomes a standing.

The judge (scripts/judge.py) decides pass or fail. Everything after it that decides whether a
passing candidate counts is here, and every reader calls it: the check function applies the
lane's language rule (`ruled`, from language_rule.py), the reviewer without a model and a
model reviewer's floor take `review_candidates`, the report's ranking takes `margin`,
`figures`, `standing` and `promote`, and the search and Discover order candidates by `speed`.
The rules themselves stay in their own files: language_rule.py (a candidate of language L runs
L) and standing.py (enough samples, a quiet device, a baseline that did not drift, a win the
host keeps up with).

One measure of fast: the speedup against the frozen baseline, the geometric mean of the
per-workload ratios (the verdict's `speedup`). Within one frozen oracle it is the frozen
medians' geometric mean over the candidate's, so it orders candidates exactly as the geometric
mean of their median ms does, fastest first; across two freezes it does not compare (that is
what ms are kept for: `tasks.search.score.geomean_ms`).
"""

from __future__ import annotations

import statistics
from typing import NamedTuple

from kernel_bakeoff.scripts.verdict import Status, Verdict, geomean
from kernel_bakeoff.tasks.check.language_rule import ruled
from kernel_bakeoff.tasks.check.standing import drift_matters, host_paced, timing_doubts
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.models.run import CandidateRow, Review, Standing

__all__ = [
    "Figures",
    "by_speed",
    "cost",
    "figures",
    "interpreted",
    "margin",
    "passed_by_speed",
    "promote",
    "review_candidates",
    "ruled",
    "speed",
    "standing",
]


# --- fast -------------------------------------------------------------------------------------


def speed(verdict: Verdict) -> float | None:
    """The speedup against the frozen baseline; None unless the verdict passed."""
    return verdict.speedup if verdict.passed else None


def cost(verdict: Verdict) -> float | None:
    """What a search minimizes: 1 / speed. Within one oracle it is the geometric mean of ms
    over a constant (the frozen medians'), so a strategy sees the same order and ratios."""
    s = speed(verdict)
    return 1.0 / s if s else None


def by_speed(results: list[CandidateResult]) -> list[CandidateResult]:
    """Every result, fastest first; those without a speed last, in the order given."""
    return sorted(results, key=lambda r: (speed(r.verdict) is None, -(speed(r.verdict) or 0.0)))


# --- the reviewer -------------------------------------------------------------------------------


def passed_by_speed(candidates: list[CandidateResult]) -> list[CandidateResult]:
    """Candidates that passed every workload, fastest first; the input re-measured never counts."""
    ranked = by_speed(candidates)
    return [c for c in ranked if speed(c.verdict) is not None and c.candidate.mode != "baseline"]


def review_candidates(candidates: list[CandidateResult]) -> Review:
    """Accept the fastest passed candidate whose timings hold up; name the faster ones that did not."""
    ranked = passed_by_speed(candidates)
    if not ranked:
        return Review(
            candidate=None,
            decision="nothing-to-review",
            reasons=["no candidate passed every workload"],
        )
    flagged: dict[str, list[str]] = {}
    for result in ranked:
        doubts = timing_doubts(result)
        if doubts:
            flagged[result.candidate.name] = doubts
            continue
        return Review(
            candidate=result.candidate.name,
            decision="accepted",
            reasons=[
                f"passed every workload, {result.verdict.speedup:.3g}x, timing spread within bounds"
            ],
            flagged=flagged,
        )
    best = ranked[0].candidate.name
    return Review(candidate=best, decision="flagged", reasons=flagged[best], flagged=flagged)


# --- a row's standing in the ranking --------------------------------------------------------------


def interpreted(language: str, device: str) -> bool:
    """Whether code of `language` on `device` runs under an interpreter (Triton on a CPU)."""
    return language.lower() == "triton" and device.lower().startswith("cpu")


def margin(result: CandidateResult, base_spread: dict[str, float]) -> float | None:
    """The candidate's relative spread plus the frozen baseline's (the denominator's), mean
    over the timed workloads."""
    parts = []
    for w in result.verdict.workloads:
        if w.checked_only:
            continue  # a size checked for correctness, never timed
        if w.timing is None or w.timing.median_ms <= 0:
            return None
        parts.append(w.timing.spread_ms / w.timing.median_ms + base_spread.get(w.workload, 0.0))
    return statistics.fmean(parts) if parts else None


class Figures(NamedTuple):
    """A candidate's times on the one denominator, per timed workload."""

    median_ms: dict[str, float | None]
    speedups: dict[str, float | None]
    speedup: float | None  # geometric mean; PASSED verdicts only
    beside_ms: dict[str, float | None]  # the baseline timed beside it: the drift detector
    drift: list[str]  # each workload whose beside run moved beyond both spreads, and how
    paced: list[str]  # each workload whose win a caller's loop would lose to the host, and why


def figures(result: CandidateResult, frozen: dict[str, float]) -> Figures:
    """Speedups recomputed here from the frozen medians, whatever denominator the verdict used:
    rows are never compared through different denominators."""
    median, speedups, beside, drift, paced = {}, {}, {}, [], []
    for w in result.verdict.workloads:
        if w.checked_only:
            continue
        timed = w.status is Status.PASSED and w.timing is not None and w.timing.median_ms > 0
        ms = w.timing.median_ms if timed else None
        base = frozen.get(w.workload)
        median[w.workload] = ms
        speedups[w.workload] = base / ms if ms and base else None
        beside[w.workload] = w.baseline_timing.median_ms if w.baseline_timing else None
        if w.status is Status.PASSED and drift_matters(w):
            drift.append(f"workload {w.workload}: {w.drift}")
        if w.status is Status.PASSED and (why := host_paced(w)):
            paced.append(why)
    values = list(speedups.values())
    ok = result.verdict.status is Status.PASSED and values and all(values)
    return Figures(median, speedups, geomean(values) if ok else None, beside, drift, paced)


def standing(
    result: CandidateResult,
    review: Review | None,
    failed_reason: str | None,
    m: float | None,
    base_interpreted: bool = False,
    fig: Figures | None = None,
) -> tuple[Standing | Status, str]:
    """Where one row stands, and why: its verdict, its lane, its reviewer's words, its margin."""
    v = result.verdict
    speedup, drift = (fig.speedup, fig.drift) if fig else (v.speedup, [])
    if v.status is not Status.PASSED:
        return v.status, v.reason or ""
    if failed_reason is not None:
        return Standing.LANE_FAILED, failed_reason
    if result.candidate.mode == "baseline":
        return Standing.BASELINE, "the input re-measured by Discover; never a winner"
    if interpreted(result.candidate.language, v.device) != base_interpreted:
        which = "the baseline" if base_interpreted else "this candidate"
        return Standing.NOT_COMPARABLE, (
            f"{which} ran under Triton's CPU interpreter and the other natively: the ratio "
            "measures the interpreter, not the kernels"
        )
    if drift:  # its figure was taken on a machine that had moved: not a number to rank on
        return Standing.FLAGGED, "; ".join(drift) + "; check it again on a quiet machine"
    if fig and fig.paced:  # the device time wins, but a caller's loop waits on the host
        return Standing.FLAGGED, "; ".join(fig.paced)
    if review is not None and result.candidate.name in review.flagged:
        return Standing.FLAGGED, "; ".join(review.flagged[result.candidate.name])
    if review is None or review.candidate != result.candidate.name:
        return Standing.PASSED, "not the best of its lane, so not reviewed"
    if review.decision != "accepted":
        return Standing.FLAGGED, "; ".join(review.reasons)
    if speedup is not None and speedup < 1:
        return Standing.SLOWER, f"{speedup:.3f}x: slower than the baseline"
    if m is None or speedup is None or speedup <= 1 + m:
        need = f"more than {1 + m:.3f}x" if m is not None else "a measured spread"
        return Standing.WITHIN_SPREAD, (
            f"faster ({speedup or 0:.3f}x) but within the spread: a win needs {need}"
        )
    return Standing.ELIGIBLE, "; ".join(review.reasons)


def promote(group: list[tuple[CandidateResult, CandidateRow]], review: Review | None) -> None:
    """When the candidate the reviewer accepted does not beat the spread, the next fastest of
    the same source that passed, has sound timings and does beat it becomes eligible."""
    accepted = review is not None and review.decision == "accepted"
    if not accepted or any(row.status is Standing.ELIGIBLE for _, row in group):
        return
    waiting = [(r, row) for r, row in group if row.status is Standing.PASSED]
    reviewed = next((row for _, row in group if row.name == review.candidate), None)
    why = "did not beat the spread"
    if reviewed is not None and reviewed.status is Standing.FLAGGED:
        why = "was flagged"
    for result, row in sorted(waiting, key=lambda pair: -(pair[1].speedup or 0.0)):
        beats = row.margin is not None and (row.speedup or 0.0) > 1 + row.margin
        if beats and not timing_doubts(result):
            row.status = Standing.ELIGIBLE
            row.detail = (
                f"{review.candidate}, the reviewed one, {why}; this one beats the spread "
                f"({row.speedup:.3f}x > {1 + row.margin:.3f}x) and its timings hold up"
            )
            break
