"""Deterministic responders: every role answered without a model, as the registry's roles
declare them. A run without a model never comes here (the lane engine answers itself:
tasks/engine/proposers.py); these answer where a role is asked through `ask` all the same, as
an operator's drop-in names them (`kernel_bakeoff.tasks.agents.without_model:search`).

planner    Discover's plan, from measurements (tasks.engine.proposers.measure_existing)
optimizer  the lane's search in optimize mode (tasks.engine.proposers.search)
author     the same search in author mode
reviewer   accepts or flags the best candidate by the one judgement (tasks.check.judgement)
op_benchmarker  the author languages of Discover's plan, as they are
reporter   no prose (the report's tables and verdicts say it all)
"""

from __future__ import annotations

from pathlib import Path

from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks.agents.outputs import AuthorPlan, ReportProse
from kernel_bakeoff.tasks.agents.request import RoleRequest
from kernel_bakeoff.tasks.check import judgement
from kernel_bakeoff.tasks.engine.proposers import Work, measure_existing
from kernel_bakeoff.tasks.engine.proposers import search as engine_search
from kernel_bakeoff.tasks.models.plan import DiscoverPlan
from kernel_bakeoff.tasks.models.run import Review, SearchOutcome


def _work(request: RoleRequest, inputs: dict) -> Work:
    i = request.inputs
    return Work(
        role=request.role,
        task=FrozenTask.open(i.task_dir),
        workdir=Path(i.workdir),
        evaluator=i.evaluator,
        inputs=inputs,
        record_dir=request.record_dir,
        timeout_s=request.deadline.remaining(),
    )


def plan_from_measurements(request: RoleRequest) -> DiscoverPlan:
    work = _work(request, {"backends": request.inputs.backends})
    return measure_existing(work, request.deadline)


def search(request: RoleRequest) -> SearchOutcome:
    i = request.inputs
    inputs = {
        "language": i.language,
        "mode": i.mode,
        "budget": i.budget,
        "budget_s": i.budget_s,
        "strategy": i.strategy,
        "history_dir": i.history_dir,
    }
    return engine_search(_work(request, inputs), request.deadline)


def review(request: RoleRequest) -> Review:
    return judgement.review_candidates(request.inputs.candidates)


def author_plan(request: RoleRequest) -> AuthorPlan:
    plan = request.inputs.plan
    entries = plan.plan if plan is not None else []
    authors = [e.language for e in entries if e.mode == "author" and e.language]
    return AuthorPlan(languages=authors, reasons=["Discover's plan"])


def no_prose(request: RoleRequest) -> ReportProse:
    return ReportProse(summary="")
