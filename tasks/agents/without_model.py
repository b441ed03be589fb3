"""Deterministic responders: every role answered without a model.

planner    Discover's plan, from measurements (tasks.discover.plan.discover)
optimizer  the lane's search in optimize mode (tasks.search.lane.run_search)
author     the same search in author mode
reviewer   accepts or flags the best candidate from its verdicts and timing spread
op_benchmarker  the author languages of Discover's plan, as they are
reporter   no prose (the report's tables and verdicts say it all)
"""

from __future__ import annotations

import os
from pathlib import Path

from scripts.verdict import Status
from tasks.agents.outputs import AuthorPlan, ReportProse
from tasks.agents.request import RoleRequest
from tasks.models.plan import CandidateResult, DiscoverPlan
from tasks.models.run import Review, SearchOutcome

# A timing whose interquartile range is over this share of its median was taken on a busy or
# unstable device: its speedup is not a number to act on. BAKEOFF_REVIEW_MAX_SPREAD overrides it
# on a host known to be shared (a loaded CPU box times interpreted Triton 40-70% apart).
MAX_RELATIVE_SPREAD = 0.25
MIN_SAMPLES = 5


def max_relative_spread() -> float:
    return float(os.environ.get("BAKEOFF_REVIEW_MAX_SPREAD") or MAX_RELATIVE_SPREAD)


def plan_from_measurements(request: RoleRequest) -> DiscoverPlan:
    from tasks.discover.plan import discover

    i = request.inputs
    evaluator = i.evaluator
    return discover(
        Path(i.task_dir),
        Path(i.workdir),
        evaluator.bind(request.deadline),
        i.backends,
        precompile_fn=evaluator.bind_precompile(request.deadline),
    )


def search(request: RoleRequest) -> SearchOutcome:
    from tasks.search.lane import run_search

    i = request.inputs
    evaluator = i.evaluator
    precompile = getattr(evaluator, "bind_precompile", None)
    results = run_search(
        Path(i.task_dir),
        i.language,
        i.mode,
        Path(i.workdir),
        evaluator.bind(request.deadline),
        budget_evals=i.budget,
        budget_s=i.budget_s,
        strategy=i.strategy,
        history_dir=i.history_dir,
        precompile_fn=precompile(request.deadline) if precompile else None,
    )
    return SearchOutcome(candidates=results)


def passed_by_speed(candidates: list[CandidateResult]) -> list[CandidateResult]:
    """Candidates that passed every workload, fastest first; the input re-measured never counts."""
    passed = [
        c
        for c in candidates
        if c.verdict.status is Status.PASSED
        and c.verdict.speedup is not None
        and c.candidate.mode != "baseline"
    ]
    return sorted(passed, key=lambda c: c.verdict.speedup, reverse=True)


def timing_doubts(result: CandidateResult) -> list[str]:
    """Why this candidate's timings are not numbers to act on (empty when they are).

    Whether the timer saw all the work is the harness's question (it FLAGs such verdicts); the
    reviewer asks whether the samples were taken on a quiet device and are enough of them."""
    reasons = []
    for w in result.verdict.workloads:
        t = w.timing
        if t is None:
            continue
        if w.drift:  # the baseline beside it moved from its frozen figure: a moved machine
            reasons.append(f"workload {w.workload}: {w.drift}")
        rel = t.spread_ms / t.median_ms if t.median_ms > 0 else float("inf")
        limit = max_relative_spread()
        if rel > limit:
            reasons.append(
                f"workload {w.workload}: timing spread is {rel:.0%} of the median "
                f"(over {limit:.0%}): busy or unstable device"
            )
        if t.sample_count < MIN_SAMPLES:
            reasons.append(
                f"workload {w.workload}: only {t.sample_count} timed samples (< {MIN_SAMPLES})"
            )
    return reasons


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


def review(request: RoleRequest) -> Review:
    return review_candidates(request.inputs.candidates)


def author_plan(request: RoleRequest) -> AuthorPlan:
    plan = request.inputs.plan
    entries = plan.plan if plan is not None else []
    authors = [e.language for e in entries if e.mode == "author" and e.language]
    return AuthorPlan(languages=authors, reasons=["Discover's plan"])


def no_prose(request: RoleRequest) -> ReportProse:
    return ReportProse(summary="")
