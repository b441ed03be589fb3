"""What a responder is handed: the rendered prompt, the role's typed inputs, a deadline.

Each role's inputs are one pydantic model (`RoleInputs`), declared beside the role in
tasks/agents/roles/ and read by attribute. They carry live objects (the lane's evaluator, the
candidates' results), so they are validated, never serialised. A drop-in responder (the
`agents` mapping) written against the inputs as a dict still reads `inputs["workdir"]` and
`inputs.get("seed")`: the drop-in contract is older than the models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kernel_bakeoff.tasks.agents.inputs import RoleInputs
from kernel_bakeoff.tasks.check.deadline import Deadline


@dataclass
class RoleRequest:
    role: str
    prompt: str  # the rendered roles/<prompt>.md: what a model-backed responder is asked
    inputs: RoleInputs  # a dict is validated into the role's inputs model
    output: type[BaseModel]
    deadline: Deadline
    record_dir: Path
    context: dict[str, Any] = field(default_factory=dict)  # what the prompt was rendered with

    def __post_init__(self) -> None:
        if isinstance(self.inputs, dict):
            # here: the registry imports every role, which import this module
            from kernel_bakeoff.tasks.agents.registry import ROLES

            model = ROLES[self.role].inputs if self.role in ROLES else None
            if model is None:
                raise KeyError(f"unknown role {self.role!r}: its inputs have no model")
            self.inputs = model.model_validate(self.inputs)
