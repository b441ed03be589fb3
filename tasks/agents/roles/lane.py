"""author and optimizer: a lane's search (no model) or its model-driven loop (tasks/agents/loop.py).

The two differ in their prompt and in where the lane starts (from scratch, or from the input
kernel); both answer with the candidates the lane checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from kernel_bakeoff.tasks.agents import without_model
from kernel_bakeoff.tasks.agents.registry import Role
from kernel_bakeoff.tasks.agents.request import RoleInputs
from kernel_bakeoff.tasks.models.run import SearchOutcome


class LaneInputs(RoleInputs):
    task_dir: Path
    language: str
    mode: Literal["optimize", "author"]
    workdir: Path
    evaluator: Any  # tasks.check.evaluate.Evaluator: the check function, bound to the deadline
    budget: int  # candidates the lane may have checked
    budget_s: float | None = None  # the search stops itself by then
    strategy: str = "auto"
    seed: dict | None = None  # a campaign round's best variant so far (flows/campaign.py)
    history_dir: str | None = None


def model_lane(request) -> SearchOutcome:
    from kernel_bakeoff.tasks.agents.loop import (
        model_lane,  # here: the responder bears its implementation's name
    )

    return model_lane(request)


def _lane_role(name: str, prompt: str) -> Role:
    return Role(
        name=name,
        prompt=prompt,
        inputs=LaneInputs,
        output=SearchOutcome,
        responder=without_model.search,
        model_responder=model_lane,
        timeout_s=3600,
    )


ROLES = [_lane_role("optimizer", "kernel_optimizer"), _lane_role("author", "kernel_author")]
