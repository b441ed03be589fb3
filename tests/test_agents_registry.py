"""The agents room's seams: roles declared once and gathered by the registry, each role's
inputs a model (a mistyped key is refused, not read as missing), the two drivers one protocol,
and a conversation's transcript closed however it ends. No Prefect, no model."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from pydantic import ValidationError

from kernel_bakeoff.tasks.agents import RoleRequest
from kernel_bakeoff.tasks.agents.conversation import ending, transcript_of
from kernel_bakeoff.tasks.agents.drivers import DRIVERS, Driver, RoleError, driver_for
from kernel_bakeoff.tasks.agents.registry import ROLES, deterministic, responder_for
from kernel_bakeoff.tasks.agents.settings import AgentSettings
from kernel_bakeoff.tasks.agents.transcript import BudgetSpent, Ledger
from kernel_bakeoff.tasks.check.deadline import Deadline
from kernel_bakeoff.tasks.models.run import Review, SearchOutcome

ROOT = Path(__file__).resolve().parents[1]


def test_every_role_is_declared_once_with_a_prompt_inputs_and_output():
    assert set(ROLES) == {
        "planner",
        "optimizer",
        "author",
        "reviewer",
        "op_benchmarker",
        "reporter",
    }
    for name, role in ROLES.items():
        assert role.name == name
        assert (ROOT / "roles" / f"{role.prompt}.md").is_file()
        assert role.responder.__module__ == "kernel_bakeoff.tasks.agents.without_model"
    assert ROLES["author"].prompt == "kernel_author" and ROLES["reviewer"].retries == 2


def test_without_a_model_the_deterministic_responder_answers_unless_a_drop_in_is_named():
    assert all(deterministic(name, None) for name in ROLES)
    drop_in = {"reviewer": "tests.role_doubles:answers_nonsense"}
    assert not deterministic("reviewer", drop_in)
    assert responder_for("reviewer", drop_in).__name__ == "answers_nonsense"
    assert deterministic(
        "reviewer", {"reviewer": "kernel_bakeoff.tasks.agents.without_model:review"}
    )


def test_inputs_are_typed_and_a_mistyped_key_is_refused(tmp_path):
    inputs = {"task_dir": "t", "mode": "author", "language": "triton", "budget": 2,
              "workdir": str(tmp_path), "evaluator": object()}  # fmt: skip
    request = RoleRequest("author", "", inputs, SearchOutcome, Deadline(9), tmp_path)
    assert request.inputs.workdir == tmp_path and request.inputs.strategy == "auto"
    # a drop-in written against the former dict reads the same values
    assert request.inputs["workdir"] == tmp_path and request.inputs.get("seed") is None
    with pytest.raises(KeyError):
        request.inputs["budjet"]
    with pytest.raises(ValidationError, match="budjet"):
        RoleRequest("author", "", inputs | {"budjet": 3}, SearchOutcome, Deadline(9), tmp_path)
    with pytest.raises(ValidationError, match="mode"):
        RoleRequest("author", "", inputs | {"mode": "tune"}, SearchOutcome, Deadline(9), tmp_path)
    review = RoleRequest("reviewer", "", {}, Review, Deadline(9), tmp_path)
    assert review.inputs.candidates == [] and review.inputs.task_dir is None


def test_both_drivers_take_the_protocols_arguments():
    wanted = {n for n, p in inspect.signature(Driver.converse).parameters.items() if n != "self"}
    for name in DRIVERS:
        driver = driver_for(AgentSettings(driver=name))
        assert wanted <= set(inspect.signature(driver.converse).parameters), name


def test_a_transcript_is_closed_with_how_its_conversation_ended(tmp_path):
    ledger = Ledger(tmp_path, AgentSettings())
    with transcript_of(ledger, "answers"):
        pass
    for exc in (RoleError("API refused"), BudgetSpent("token budget spent"), ValueError("x")):
        with pytest.raises(type(exc)), transcript_of(ledger, "raises"):
            raise exc
    outcomes = [c.outcome for c in ledger.usage.calls]
    assert outcomes == ["answered", "failed: API refused", "stopped: token budget spent",
                        "failed: ValueError: x"]  # fmt: skip
    assert ending(RoleError("r")) == "failed: r"
