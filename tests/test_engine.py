"""The lane engine's walls: the model's room (tasks/agents) is a leaf that a run without a model
never imports, the engine picks who proposes and who judges by one rule, and a lane opens its
frozen task once, as the oracle the run froze."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks.engine import model_room as door
from kernel_bakeoff.tasks.engine import proposers
from kernel_bakeoff.tasks.engine.lane import lane_store, run_lane
from kernel_bakeoff.tasks.engine.proposers import Work, lane_proposer, plan_proposer
from kernel_bakeoff.tasks.models.run import LaneConfig, LaneSpec
from kernel_bakeoff.tasks.run.key import forget_key
from tests.import_graph import ROOT, edges

FLOWS_AND_ENGINE = [
    "kernel_bakeoff.flows.cli",
    "kernel_bakeoff.flows.live",
    "kernel_bakeoff.flows.bakeoff",
    "kernel_bakeoff.flows.lane",
    "kernel_bakeoff.flows.discover",
    "kernel_bakeoff.flows.report",
    "kernel_bakeoff.flows.freeze",
    "kernel_bakeoff.flows.campaign",
    "kernel_bakeoff.flows.regression",
    "kernel_bakeoff.tasks.engine.lane",
    "kernel_bakeoff.tasks.engine.discover",
    "kernel_bakeoff.tasks.engine.proposers",
]


def test_nothing_outside_the_models_room_imports_it():
    # The door (tasks/engine/model_room.py) reaches it by name with importlib, which the graph
    # does not count: that is the one way in.
    crossing = sorted(
        f"{a} -> {b}"
        for a, targets in edges().items()
        if not a.startswith("tasks.agents")
        for b in targets
        if b.startswith("tasks.agents")
    )
    assert crossing == []


def test_the_flows_and_the_engine_load_none_of_the_models_room():
    code = (
        "import importlib, sys\n"
        f"for name in {FLOWS_AND_ENGINE!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.startswith('kernel_bakeoff.tasks.agents')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_drop_in_or_a_model_answers_and_the_search_otherwise(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    forget_key()
    assert not door.by_model("optimizer", {})
    assert not door.by_model("optimizer", {"reviewer": "tests.role_doubles:answers_nonsense"})
    assert door.by_model("reviewer", {"reviewer": "tests.role_doubles:answers_nonsense"})
    assert door.by_model("planner", {"planner": "tests.role_doubles:plan_input_and_triton"})
    assert door.identity() is None  # no model: the lanes' cache keys name none
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    try:
        for role in ("optimizer", "author", "reviewer", "op_benchmarker", "reporter"):
            assert door.by_model(role, {})
        assert not door.by_model("planner", {})  # Discover's planner has no model of its own
    finally:
        forget_key()


def test_a_frozen_task_is_opened_once_and_must_be_the_oracle_the_run_froze(frozen_rmsnorm):
    task = FrozenTask.open(frozen_rmsnorm)
    assert task.oracle_sha256 == manifest.verify(frozen_rmsnorm)
    assert task.spec.name and task.baseline.medians()
    assert FrozenTask.open(frozen_rmsnorm, task.oracle_sha256) == task
    with pytest.raises(BadInput, match="not the 000000000000 this run froze"):
        FrozenTask.open(frozen_rmsnorm, "0" * 64)


def test_a_lane_handed_another_oracle_fails_saying_so_before_any_check(frozen_rmsnorm, tmp_path):
    config = LaneConfig(
        run_dir=str(tmp_path),
        task_dir=str(frozen_rmsnorm),
        oracle_sha256="0" * 64,  # what the bake-off froze; the directory was frozen again since
        lane=LaneSpec(key="torch", language="torch", mode="optimize"),
        budget=1,
    )
    said: list[str] = []
    result = run_lane(config, lane_store(config), said.append)
    assert result.status == "failed" and not result.candidates
    assert "not the 000000000000 this run froze" in result.reason
    assert not (tmp_path / "checked").exists()  # nothing was checked


def test_the_proposer_is_the_search_or_the_backends_unless_a_model_or_a_drop_in_answers(
    monkeypatch,
):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    forget_key()

    def work(role, agents):
        none = dict(task=None, workdir=None, evaluator=None, record_dir=None)
        return Work(role=role, agents=agents, timeout_s=1, **none)

    assert lane_proposer(work("optimizer", {})) is proposers.search
    assert plan_proposer(work("planner", {})) is proposers.measure_existing
    drop_in = {"optimizer": "tests.role_doubles:baseline_copies"}
    assert (
        lane_proposer(work("optimizer", drop_in)).__module__
        == "kernel_bakeoff.tasks.agents.proposing"
    )
    assert (
        plan_proposer(work("planner", {"planner": "x:y"})).__module__
        == "kernel_bakeoff.tasks.agents.proposing"
    )
