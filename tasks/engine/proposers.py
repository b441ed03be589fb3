"""Proposers: who makes a lane's candidates, and Discover's, as one plug-in axis.

A proposer takes the work it is handed (`Work`: the frozen task, the checker bound to a
deadline, the bounds) and answers with what it checked. Without a model the engine's own
proposers answer: the search (tasks.engine.search_lane) for a lane, the backends' proposals
(tasks.discover.plan) for Discover. Where a model is configured, or the operator names a
`module:callable` drop-in for the role in the `agents` mapping, the model's room answers
instead (tasks.agents.proposing, loaded by name through tasks/engine/model_room.py and
nowhere else: a run without a model never imports the model's room). The reviewer is chosen
the same way (`judge`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks.check import judgement
from kernel_bakeoff.tasks.check.deadline import Deadline
from kernel_bakeoff.tasks.check.evaluate import Evaluator
from kernel_bakeoff.tasks.discover.plan import discover
from kernel_bakeoff.tasks.engine.model_room import by_model, model_room
from kernel_bakeoff.tasks.engine.search_lane import run_search
from kernel_bakeoff.tasks.models.plan import CandidateResult, DiscoverPlan
from kernel_bakeoff.tasks.models.run import Review, SearchOutcome


class ProposerFailed(Exception):
    """No valid answer from the proposer (or the reviewer) after its retries; the lane's reason."""


@dataclass(frozen=True, kw_only=True)
class Work:
    """What a proposer is handed. `inputs` are the role's own (language, mode, budget, ...);
    `context` is what a model's prompt is rendered from; `record_dir` keeps a model's prompt,
    answer and transcript; `timeout_s` bounds the whole answer, every check included."""

    role: str  # optimizer, author (a lane) or planner (Discover)
    task: FrozenTask  # opened once, by the engine
    workdir: Path
    evaluator: Evaluator
    inputs: dict = field(default_factory=dict)
    context: dict = field(default_factory=dict)
    record_dir: Path
    agents: dict[str, str] = field(default_factory=dict)
    timeout_s: float

    @property
    def task_dir(self) -> Path:
        return self.task.task_dir


class Proposer(Protocol):
    """The plug-in axis: anything that answers a `Work` with the candidates it checked (a
    lane's `SearchOutcome`, Discover's `DiscoverPlan`). The engine's own are `search` and
    `measure_existing`; the model's room's are `tasks.agents.proposing.lane` and `.plan`,
    which also run an operator's `module:callable` drop-in named in `agents`."""

    def __call__(self, work: Work) -> SearchOutcome | DiscoverPlan: ...


def search(work: Work, deadline: Deadline | None = None) -> SearchOutcome:
    """A lane without a model: its language's space tuned on the frozen op, every candidate
    checked, stopping at the budget; checks honour the deadline (`timeout_s` from now unless
    one is given), so it ends by then."""
    i = work.inputs
    deadline = deadline or Deadline(work.timeout_s)
    precompile = getattr(work.evaluator, "bind_precompile", None)  # a test's checker may lack it
    try:
        results = run_search(
            work.task,
            i["language"],
            i["mode"],
            work.workdir,
            work.evaluator.bind(deadline),
            budget_evals=i["budget"],
            budget_s=i.get("budget_s"),
            strategy=i.get("strategy", "auto"),
            history_dir=i.get("history_dir"),
            precompile_fn=precompile(deadline) if precompile else None,
        )
    finally:
        deadline.cancel()
    return SearchOutcome(candidates=results)


def measure_existing(work: Work, deadline: Deadline | None = None) -> DiscoverPlan:
    """Discover without a model: every backend's proposals for the op, checked after the input."""
    deadline = deadline or Deadline(work.timeout_s)
    try:
        return discover(
            work.task,
            work.workdir,
            work.evaluator.bind(deadline),
            work.inputs.get("backends"),
            precompile_fn=work.evaluator.bind_precompile(deadline),
        )
    finally:
        deadline.cancel()


def lane_proposer(work: Work) -> Proposer:
    """Who answers a lane: the model's room where a model or a drop-in answers its role, else
    the search."""
    return model_room("lane") if by_model(work.role, work.agents) else search


def plan_proposer(work: Work) -> Proposer:
    """Who answers Discover: a drop-in for the planner where one is named, else the backends."""
    return model_room("plan") if by_model("planner", work.agents) else measure_existing


def propose_lane(work: Work) -> SearchOutcome:
    return lane_proposer(work)(work)


def propose_plan(work: Work) -> DiscoverPlan:
    return plan_proposer(work)(work)


@dataclass(frozen=True, kw_only=True)
class Judging:
    """Who reviews a set of checked candidates, and what a model reviewer may read: the frozen
    task (each candidate's diff against the input) and the device (to profile on)."""

    subject: str
    record_dir: Path
    agents: dict[str, str] = field(default_factory=dict)
    timeout_s: float | None = None
    retries: int | None = None
    task_dir: str | None = None
    device_env: dict[str, str] | None = None


def judge(candidates: list[CandidateResult], how: Judging) -> Review:
    """The reviewer's decision: the one judgement alone without a model (tasks.check.judgement),
    else the model's reviewer, whose floor is the same judgement."""
    if by_model("reviewer", how.agents):
        return model_room("review")(candidates, how)
    return judgement.review_candidates(candidates)
