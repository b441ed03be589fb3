"""Ranking every candidate of a run on the one frozen baseline: its rows, one per check, in order.

Where each row stands (the rule for a winner below) is decided in tasks/check/judgement.py, the
one judgement the reviewers also call; this module builds the rows, keeps one per check, orders
them and names the winner.

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

import statistics
from pathlib import Path

from kernel_bakeoff.scripts.frozen_task import FrozenTask, fingerprint_of, spec_and_baseline
from kernel_bakeoff.tasks.check import judgement
from kernel_bakeoff.tasks.check.standing import baseline_stats, noisy_baseline
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.models.run import CandidateRow, DiscoverOutcome, LaneResult, Standing


def baseline_interpreted(task: FrozenTask | Path) -> bool:
    try:
        spec, base = spec_and_baseline(task)
    except (OSError, ValueError):
        return False
    return judgement.interpreted(spec.language, base.device)


def measurement(task: FrozenTask | Path) -> dict:
    """What a reader needs to believe the figures: the device's fingerprint, the clock, whether
    the baseline ran under an interpreter, and its spread per workload."""
    try:
        finger = fingerprint_of(task)
        _, base = spec_and_baseline(task)
    except (OSError, ValueError):
        return {}
    clocks = sorted({w.clock or "?" for w in base.workloads.values()})
    _, spreads = baseline_stats(task)
    return {
        "fingerprint": finger,
        "clock": ", ".join(clocks),
        "interpreted": baseline_interpreted(task),
        "baseline_spread": spreads,
        "baseline_noisy": noisy_baseline(task),
    }


def _row(result, source, review, failed_reason, base, base_interp=False) -> CandidateRow:
    """`base`: the frozen baseline's (medians, relative spreads) per workload."""
    m = judgement.margin(result, base[1])
    fig = judgement.figures(result, base[0])
    status, detail = judgement.standing(result, review, failed_reason, m, base_interp, fig)
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
    lanes: list[LaneResult], discovered: DiscoverOutcome | None, task: FrozenTask | Path
) -> tuple[list[CandidateRow], CandidateRow | None]:
    """Every candidate in one table, fastest first, and the winner or None, on `task`'s frozen
    baseline (the task opened once, or its directory)."""
    base = baseline_stats(task)
    interp = baseline_interpreted(task)
    groups = []
    for lane in lanes:
        failed = (lane.reason or "lane failed") if lane.status == "failed" else None
        group = [(r, _row(r, lane.key, lane.review, failed, base, interp)) for r in lane.candidates]
        judgement.promote(group, lane.review)
        groups += group
    if discovered is not None:
        plan = discovered.plan
        found = plan.measured + ([plan.env_candidate] if plan.env_candidate else [])
        group = [(r, _row(r, "discover", discovered.review, None, base, interp)) for r in found]
        judgement.promote(group, discovered.review)
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
