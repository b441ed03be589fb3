"""The model's room seen from the lane engine and the flows: a role asked through `ask` (its
prompt, Prefect task, timeout, retries and transcript), answering in the engine's terms, and
the model's other steps of a bake-off (the author plan, the report's prose, the learned card,
the operator's `agents` mapping checked, an op spec written). `tasks.engine.model_room` loads
this module by name, only where a model is configured or the operator named a drop-in, so
nothing without a model imports this room.
"""

from __future__ import annotations

from kernel_bakeoff.tasks.agents.experience import curate_bakeoff, update_experience
from kernel_bakeoff.tasks.agents.freezer import source_for, spec_for
from kernel_bakeoff.tasks.agents.registry import check_agents
from kernel_bakeoff.tasks.agents.reviewing import review as ask_reviewer
from kernel_bakeoff.tasks.agents.role_task import RoleFailed, ask
from kernel_bakeoff.tasks.agents.roles.op_benchmarker import plan_authors
from kernel_bakeoff.tasks.agents.roles.reporter import report_prose
from kernel_bakeoff.tasks.agents.settings import agent_identity
from kernel_bakeoff.tasks.engine.proposers import Judging, ProposerFailed, Work
from kernel_bakeoff.tasks.models.plan import CandidateResult, DiscoverPlan
from kernel_bakeoff.tasks.models.run import Review, SearchOutcome


def _ask(work: Work):
    inputs = {
        "task_dir": work.task_dir,
        "workdir": work.workdir,
        "evaluator": work.evaluator,
        **work.inputs,
    }
    try:
        return ask(
            work.role,
            inputs=inputs,
            context=work.context,
            record_dir=work.record_dir,
            agents=work.agents,
            timeout_s=work.timeout_s,
        )
    except RoleFailed as exc:  # in the engine's terms, its words kept
        raise ProposerFailed(str(exc)) from exc


def lane(work: Work) -> SearchOutcome:
    """The author's or optimizer's answer: the model-driven lane loop, or the role's drop-in."""
    return _ask(work)


def plan(work: Work) -> DiscoverPlan:
    """The planner's answer, where a drop-in is named for it."""
    return _ask(work)


def review(candidates: list[CandidateResult], how: Judging) -> Review:
    try:
        return ask_reviewer(
            candidates,
            how.subject,
            how.record_dir,
            how.agents,
            how.timeout_s,
            how.retries,
            task_dir=how.task_dir,
            device_env=how.device_env,
        )
    except RoleFailed as exc:
        raise ProposerFailed(str(exc)) from exc


def identity() -> str | None:
    """Which model drives the lanes (for their cache keys); None without one."""
    return agent_identity()


def learn(result, task_dir, lane_dir, say):
    """One learned card after a measured win of the model's lane (tasks/agents/experience.py)."""
    return update_experience(result, task_dir, lane_dir, say)


# the bake-off's other model steps, named here so that the flows reach them by name
__all__ = [
    "check_agents",
    "curate_bakeoff",
    "plan_authors",
    "report_prose",
    "source_for",
    "spec_for",
]
