"""Deterministic responders: every role answered without a model.

planner    Discover's plan, from measurements (tasks.discover.discover)
optimizer  the lane's search in optimize mode (tasks.search.run_search)
author     the same search in author mode
reviewer   accepts or flags the best candidate from its verdicts and timing spread
"""

from __future__ import annotations

from pathlib import Path

from scripts.verdict import Status
from tasks.agents import RoleRequest
from tasks.models import CandidateResult, DiscoverPlan
from tasks.results import Review, SearchOutcome

# A timing whose interquartile range is over this share of its median was taken on a busy or
# unstable device: its speedup is not a number to act on.
MAX_RELATIVE_SPREAD = 0.25
MIN_SAMPLES = 5
# The judge's wall clock per call can include launch overhead but never be much below the
# device timer; far below it means the device timer did not see the work.
MIN_WALL_TO_DEVICE = 0.5


def plan_from_measurements(request: RoleRequest) -> DiscoverPlan:
    from tasks.discover import discover

    i = request.inputs
    check_fn = i["evaluator"].bind(request.deadline)
    return discover(Path(i["task_dir"]), Path(i["workdir"]), check_fn, i.get("backends"))


def search(request: RoleRequest) -> SearchOutcome:
    from tasks.search import run_search

    i = request.inputs
    results = run_search(
        Path(i["task_dir"]),
        i["language"],
        i["mode"],
        Path(i["workdir"]),
        i["evaluator"].bind(request.deadline),
        budget_evals=i["budget"],
        budget_s=i["budget_s"],
        strategy=i.get("strategy", "auto"),
        history_dir=i.get("history_dir"),
    )
    return SearchOutcome(candidates=results)


def best_passed(candidates: list[CandidateResult]) -> CandidateResult | None:
    """The fastest candidate that passed every workload; the input re-measured never counts."""
    passed = [
        c
        for c in candidates
        if c.verdict.status is Status.PASSED
        and c.verdict.speedup is not None
        and c.candidate.mode != "baseline"
    ]
    return max(passed, key=lambda c: c.verdict.speedup, default=None)


def review_candidates(candidates: list[CandidateResult]) -> Review:
    best = best_passed(candidates)
    if best is None:
        return Review(
            candidate=None,
            decision="nothing-to-review",
            reasons=["no candidate passed every workload"],
        )
    reasons = []
    for w in best.verdict.workloads:
        t = w.timing
        if t is None:
            continue
        rel = t.spread_ms / t.median_ms if t.median_ms > 0 else float("inf")
        if rel > MAX_RELATIVE_SPREAD:
            reasons.append(
                f"workload {w.workload}: timing spread is {rel:.0%} of the median "
                f"(over {MAX_RELATIVE_SPREAD:.0%}): busy or unstable device"
            )
        if t.sample_count < MIN_SAMPLES:
            reasons.append(
                f"workload {w.workload}: only {t.sample_count} timed samples (< {MIN_SAMPLES})"
            )
        if t.wall_ms_per_call is not None and t.wall_ms_per_call < MIN_WALL_TO_DEVICE * t.median_ms:
            reasons.append(
                f"workload {w.workload}: wall clock {t.wall_ms_per_call:.4g} ms per call is under "
                f"half the device timer's {t.median_ms:.4g} ms"
            )
    if reasons:
        return Review(candidate=best.candidate.name, decision="flagged", reasons=reasons)
    return Review(
        candidate=best.candidate.name,
        decision="accepted",
        reasons=[
            f"passed every workload, {best.verdict.speedup:.3g}x, timing spread within bounds"
        ],
    )


def review(request: RoleRequest) -> Review:
    return review_candidates(request.inputs["candidates"])
