"""Ranking every candidate of a run on the one frozen baseline, and the rule for a winner.

Every speedup here is the frozen baseline's median (baseline.json, taken at freeze) over the
candidate's median, workload by workload: one denominator for every row, so a faster median is
a larger speedup. The baseline's run beside each candidate in its check only detects drift:
when it moved from the frozen figure beyond both spreads (even after the judge re-timed it),
the machine was not the one the baseline was frozen on, and the row is `flagged` with that
reason. Rows are ordered by what can be trusted, then by speed: figures that stand (winner,
eligible, passed, within-spread, slower) first, then flagged and lane-failed rows, then the
input re-measured as a candidate (`baseline`), then failures; fastest first within each.

A candidate may win only if it passed every workload, its lane (or Discover) completed, the
reviewer accepted it, and its overall speedup beats the baseline by more than the measured
spread: speedup > 1 + margin, where margin is the mean over workloads of the candidate's
relative interquartile range plus the frozen baseline's. When the accepted candidate does not
beat the spread, the next fastest of its lane whose timings hold up and that does beat it is
eligible instead. No candidate may win by default:
with no eligible candidate the original kernel is kept.

A speedup between code run by Triton's CPU interpreter and native code (torch on the CPU, say)
measures the interpreter, not the kernels: such rows are `not-comparable`, and never win. Labels
say what happened: `slower` (below 1x), `within-spread` (faster, but not beyond the spread),
`flagged` (the reviewer's doubts); the baseline's own re-measurement is never "the best".
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import NamedTuple

from scripts.baseline import FrozenBaseline
from scripts.spec import OpSpec
from scripts.verdict import Status, geomean
from tasks.check.standing import (
    baseline_stats,
    drift_matters,
    host_paced,
    noisy_baseline,
    timing_doubts,
)
from tasks.models.plan import CandidateResult
from tasks.models.run import CandidateRow, DiscoverOutcome, LaneResult, Review, Standing


def interpreted(language: str, device: str) -> bool:
    """Whether code of `language` on `device` runs under an interpreter (Triton on a CPU)."""
    return language.lower() == "triton" and device.lower().startswith("cpu")


def baseline_interpreted(task_dir: Path) -> bool:
    task_dir = Path(task_dir)
    try:
        spec = OpSpec.read(task_dir)
        base = FrozenBaseline.read(task_dir)
    except (OSError, ValueError):
        return False
    return interpreted(spec.language, base.device)


def measurement(task_dir: Path) -> dict:
    """What a reader needs to believe the figures: the device's fingerprint, the clock, whether
    the baseline ran under an interpreter, and its spread per workload."""
    task_dir = Path(task_dir)
    try:
        finger = json.loads((task_dir / "fingerprint.json").read_text())
        base = FrozenBaseline.read(task_dir)
    except (OSError, ValueError):
        return {}
    clocks = sorted({w.clock or "?" for w in base.workloads.values()})
    _, spreads = baseline_stats(task_dir)
    return {
        "fingerprint": finger,
        "clock": ", ".join(clocks),
        "interpreted": baseline_interpreted(task_dir),
        "baseline_spread": spreads,
        "baseline_noisy": noisy_baseline(task_dir),
    }


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


def _status(
    result: CandidateResult,
    review: Review | None,
    failed_reason: str | None,
    m: float | None,
    base_interpreted: bool = False,
    fig: Figures | None = None,
) -> tuple[Standing | Status, str]:
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


def _row(result, source, review, failed_reason, base, base_interp=False) -> CandidateRow:
    """`base`: the frozen baseline's (medians, relative spreads) per workload."""
    m = margin(result, base[1])
    fig = figures(result, base[0])
    status, detail = _status(result, review, failed_reason, m, base_interp, fig)
    return CandidateRow(
        rank=0,
        name=result.candidate.name,
        language=result.candidate.language,
        mode=result.candidate.mode,
        source=source,
        status=status,
        detail=detail,
        speedup=fig.speedup,
        speedups=fig.speedups,
        median_ms=fig.median_ms,
        baseline_beside_ms=fig.beside_ms,
        margin=m,
        spread=_spread(result),
        comparable=status is not Standing.NOT_COMPARABLE,
        path=result.candidate.path,
        built_from=result.candidate.origin or "",
    )


def _spread(result: CandidateResult) -> float | None:
    """The candidate's own relative spread (interquartile range / median), mean over workloads."""
    parts = [
        w.timing.spread_ms / w.timing.median_ms
        for w in result.verdict.workloads
        if w.timing is not None and w.timing.median_ms > 0
    ]
    return statistics.fmean(parts) if parts else None


def _promote(group: list[tuple[CandidateResult, CandidateRow]], review: Review | None) -> None:
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


# Which of two rows of one check stays: a reviewer's acceptance, then a reviewer's words on
# it (doubts, "within the spread", "slower") before a row no reviewer looked at.
STANDING = (
    Standing.ELIGIBLE,
    Standing.FLAGGED,
    Standing.WITHIN_SPREAD,
    Standing.SLOWER,
    Standing.PASSED,
    Standing.LANE_FAILED,
)


def _one_row_per_check(pairs: list[tuple[CandidateResult, CandidateRow]]) -> list[CandidateRow]:
    """One row per check. A candidate that Discover and a lane both proposed (the same files
    and settings) is checked once and its verdict shared, so its rows differ only in which
    reviewer saw it: the row kept is the one whose status ranks first in `STANDING` (a lane's
    before Discover's on a tie), and names the other sources in `also_from`."""
    kept: dict[str, CandidateRow] = {}
    for result, row in pairs:
        key = result.verdict.model_dump_json()
        first = kept.setdefault(key, row)
        if first is row:
            continue
        better, other = sorted((first, row), key=_standing)
        better.also_from = [*better.also_from, *other.also_from, other.source]
        kept[key] = better
    return list(kept.values())


def _standing(row: CandidateRow) -> int:
    return STANDING.index(row.status) if row.status in STANDING else len(STANDING)


def rank(
    lanes: list[LaneResult], discovered: DiscoverOutcome | None, task_dir: Path
) -> tuple[list[CandidateRow], CandidateRow | None]:
    """Every candidate in one table, fastest first, and the winner or None."""
    base = baseline_stats(task_dir)
    interp = baseline_interpreted(task_dir)
    groups = []
    for lane in lanes:
        failed = (lane.reason or "lane failed") if lane.status == "failed" else None
        group = [(r, _row(r, lane.key, lane.review, failed, base, interp)) for r in lane.candidates]
        _promote(group, lane.review)
        groups += group
    if discovered is not None:
        plan = discovered.plan
        found = plan.measured + ([plan.env_candidate] if plan.env_candidate else [])
        group = [(r, _row(r, "discover", discovered.review, None, base, interp)) for r in found]
        _promote(group, discovered.review)
        groups += group
    rows = _one_row_per_check(groups)
    # Comparable figures first; within them, figures that stand before flagged ones before
    # failures, and the fastest first (one denominator: a faster median is a larger speedup).
    # A ratio that measures the interpreter goes last.
    rows.sort(key=lambda r: (not r.comparable, tier(r), r.speedup is None, -(r.speedup or 0.0)))
    for i, row in enumerate(rows, 1):
        row.rank = i
    winner = next((r for r in rows if r.status is Standing.ELIGIBLE), None)
    if winner is not None:
        winner.status = Standing.WINNER
    return rows, winner


# Contenders whose figures stand, then rows someone doubted (each group by speed), then the
# input re-measured as a candidate (a reference row, never a contender), then failures.
STANDS = (
    Standing.WINNER,
    Standing.ELIGIBLE,
    Standing.PASSED,
    Standing.WITHIN_SPREAD,
    Standing.SLOWER,
)
DOUBTED = (Standing.FLAGGED, Standing.LANE_FAILED)


def tier(row: CandidateRow) -> int:
    if row.status in STANDS:
        return 0
    if row.status in DOUBTED:
        return 1
    return 2 if row.status is Standing.BASELINE else 3
