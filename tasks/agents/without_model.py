"""Deterministic responders: every role answered without a model.

planner    Discover's plan, from measurements (tasks.discover.plan.discover)
optimizer  the lane's search in optimize mode (tasks.engine.search_lane.run_search)
author     the same search in author mode
reviewer   accepts or flags the best candidate by the one judgement (tasks.check.judgement)
op_benchmarker  the author languages of Discover's plan, as they are
reporter   no prose (the report's tables and verdicts say it all)
"""

from __future__ import annotations

from pathlib import Path

from tasks.agents.outputs import AuthorPlan, ReportProse
from tasks.agents.request import RoleRequest
from tasks.check import judgement
from tasks.discover.plan import discover
from tasks.engine.search_lane import run_search
from tasks.models.plan import DiscoverPlan
from tasks.models.run import Review, SearchOutcome


def plan_from_measurements(request: RoleRequest) -> DiscoverPlan:

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


def review(request: RoleRequest) -> Review:
    return judgement.review_candidates(request.inputs.candidates)


def author_plan(request: RoleRequest) -> AuthorPlan:
    plan = request.inputs.plan
    entries = plan.plan if plan is not None else []
    authors = [e.language for e in entries if e.mode == "author" and e.language]
    return AuthorPlan(languages=authors, reasons=["Discover's plan"])


def no_prose(request: RoleRequest) -> ReportProse:
    return ReportProse(summary="")
