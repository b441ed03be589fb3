"""The task sheet states everything measurable: shapes and dtypes per workload, the frozen
baseline's time, bytes and flops, the roofline floor (the report's, tasks/check/roofline.py) and the
baseline's distance to it, the tolerance as a number, the device and its peaks, card facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_bakeoff.scripts.freeze import load_task
from kernel_bakeoff.tasks.agents.knowledge import KNOWLEDGE
from kernel_bakeoff.tasks.agents.sheet import hardware_facts, workload_rows
from kernel_bakeoff.tasks.check.roofline import DeviceRates, floors
from tests.agent_kernels import frozen_tiny_softmax
from tests.test_agents_api import workspace

RATES = DeviceRates(arch="sm_90", bandwidth=4.8e12, peak_flops=989e12, source="datasheet", note="")


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sheet")
    return frozen_tiny_softmax(root)


def test_rows_carry_the_reports_floor_and_the_baselines_distance_to_it(task):
    spec, _, baseline = load_task(task)
    rows = {r["name"]: r for r in workload_rows(spec, baseline, RATES)}
    floor = {f.workload: f for f in floors(spec, RATES)}
    square = rows["square"]
    assert square["inputs"] == ["x 16x128 float32"]
    assert square["bytes"] == floor["square"].bytes == 16 * 128 * 4
    assert square["flops"] == 5 * 16 * 128
    assert square["floor_ms"] == floor["square"].memory_floor_ms and square["bound"] == "memory"
    base = baseline.workloads["square"].median_ms
    assert square["baseline_ms"] == base
    assert square["times_floor"] == pytest.approx(base / floor["square"].memory_floor_ms)
    untimed = [r for r in rows.values() if not r["timed"]]
    assert untimed and all(r["baseline_ms"] is None and r["floor_ms"] is None for r in untimed)


def test_the_sheet_the_model_reads_says_it(task, tmp_path):
    ws = workspace(task, tmp_path / "lane")
    sheet = (ws.root / "TASK.md").read_text()
    assert "2e-05 for float32" in sheet  # the tolerance as a number, before any verdict
    assert "| square | x 16x128 float32 |" in sheet
    assert "Device: " in sheet and "(cpu): peak memory bandwidth" in sheet
    assert "(memory) |" in sheet and "baseline / floor" in sheet
    assert "square@M=8 | x 8x128 float32 | checked, not timed" in sheet


def test_hardware_facts_come_from_the_cards_this_architecture_first():
    cards = sorted(KNOWLEDGE.glob("*.md"))
    facts = hardware_facts([c for c in cards if c.name != "README.md"], "sm_90", limit=50)
    assert facts and all(any(ch.isdigit() for ch in f) for f in facts)
    first_card = facts[0].rsplit("(", 1)[1]
    assert "hopper" in first_card, facts[0]
