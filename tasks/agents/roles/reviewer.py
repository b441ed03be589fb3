"""reviewer: may the lane's best candidate compete for the win? The deterministic review is the
floor; a model reviewer (tasks/agents/review.py) may flag what it accepted, never the reverse."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from kernel_bakeoff.tasks.agents import without_model
from kernel_bakeoff.tasks.agents.registry import Role
from kernel_bakeoff.tasks.agents.request import RoleInputs
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.models.run import Review


class ReviewInputs(RoleInputs):
    candidates: list[CandidateResult] = Field(default_factory=list)
    task_dir: Path | None = None  # the frozen task: the diff against the input, the profile
    device_env: dict[str, str] = Field(default_factory=dict)  # the lane's device, to profile on


def review(request) -> Review:
    from kernel_bakeoff.tasks.agents.review import (
        review,  # here: the responder bears its implementation's name
    )

    return review(request)


ROLE = Role(
    name="reviewer",
    prompt="reviewer",
    inputs=ReviewInputs,
    output=Review,
    responder=without_model.review,
    model_responder=review,
    timeout_s=600,
    # model faults are retried inside the driver, so these are for the deterministic one's sake
    retries=2,
)
