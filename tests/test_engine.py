"""The lane engine's walls: the model's room (tasks/agents) is a leaf that a run without a model
never imports, and the engine picks who proposes and who judges by one rule."""

from __future__ import annotations

import subprocess
import sys

from tasks.engine import model_room as door
from tasks.run.key import forget_key
from tests.import_graph import ROOT, edges

FLOWS_AND_ENGINE = [
    "flows.cli",
    "flows.live",
    "flows.bakeoff",
    "flows.lane",
    "flows.discover",
    "flows.report",
    "flows.freeze",
    "flows.campaign",
    "flows.regression",
    "tasks.engine.lane",
    "tasks.engine.discover",
    "tasks.engine.proposers",
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
        "print(sorted(m for m in sys.modules if m.startswith('tasks.agents')))\n"
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
