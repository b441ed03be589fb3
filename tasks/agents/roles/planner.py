"""planner: Discover's measuring step. The harness checks what exists for the op and plans
optimize lanes where an editable implementation exists, author lanes else; no model answers it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_bakeoff.tasks.agents import without_model
from kernel_bakeoff.tasks.agents.registry import Role
from kernel_bakeoff.tasks.agents.request import RoleInputs
from kernel_bakeoff.tasks.models.plan import DiscoverPlan


class PlannerInputs(RoleInputs):
    task_dir: Path
    workdir: Path
    evaluator: Any  # tasks.check.evaluate.Evaluator: the check function, bound to the deadline
    backends: list[str] | None = None  # None: every backend


ROLE = Role(
    name="planner",
    prompt="planner",
    inputs=PlannerInputs,
    output=DiscoverPlan,
    responder=without_model.plan_from_measurements,
    timeout_s=3600,
)
