"""The quick check: correctness only, at the small sizes, untimed, through the harness's own
check in its box; advice to the model that never becomes a verdict of the record. And the
command tool runs the harness's own interpreter (its torch and Triton), in the box."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.agents.quick import QuickChecks
from kernel_bakeoff.tasks.agents.tools import LaneTools
from tests.agent_kernels import WRONG, frozen_tiny_softmax, rows_kernel
from tests.test_agents_api import workspace


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("quick")
    return frozen_tiny_softmax(root)


def test_a_quick_verdict_checks_the_small_sizes_and_times_nothing(task, tmp_path):
    good = tmp_path / "kernel.py"
    good.write_text(rows_kernel(4))
    v = check(task, good, quick=True, workdir=tmp_path / "work")
    assert v.status is Status.PASSED and v.speedup is None
    names = [w.workload for w in v.workloads]
    assert "square" in names and "wide" not in names  # the smallest timed one, and the sizes
    assert any("@" in n for n in names)
    assert all(w.checked_only and w.timing is None for w in v.workloads)


def test_the_model_quick_checks_a_draft_without_spending_a_timed_check(task, tmp_path):
    ws = workspace(task, tmp_path / "lane")
    quick = QuickChecks(task, tmp_path / "lane" / "quick", entry_file="kernel.py", allowance=2)
    tools = LaneTools(ws, None, language="triton", mode="author", allowance=lambda: 1,
                      command_timeout_s=60, output_chars=4000, quick=quick)  # fmt: skip
    assert "quick_check" in tools.names()
    (ws.root / "candidates").mkdir(exist_ok=True)
    (ws.root / "candidates" / "rows.py").write_text(rows_kernel(4))
    (ws.root / "candidates" / "wrong.py").write_text(WRONG)
    text, is_error = tools.call("quick_check", {"path": "candidates/rows.py"})
    assert not is_error and text.startswith("quick check: PASSED"), text
    assert "untimed" in text and "receipt" not in text.replace("no receipt", "")
    assert "Triton kernels launched: _rows" in text and "1 quick check(s) left" in text
    text, is_error = tools.call("quick_check", {"path": "candidates/wrong.py"})
    assert not is_error and "INCORRECT_NUMERICAL" in text and "tolerance 2e-05" in text, text
    text, is_error = tools.call("quick_check", {"path": "candidates/rows.py"})
    assert is_error and "no quick checks left (2 per lane)" in text
    text, is_error = tools.call("quick_check", {"path": "/etc/passwd"})
    assert is_error and "outside the workspace" in text
    assert ws.checked() == 0 and ws.results() == []  # nothing entered the record


def test_the_command_tool_runs_the_harness_interpreter_in_the_box(task, tmp_path):
    import torch
    import triton

    ws = workspace(task, tmp_path / "lane")
    tools = LaneTools(ws, None, language="triton", mode="author", allowance=lambda: 0,
                      command_timeout_s=120, output_chars=4000,
                      device_env={"TRITON_INTERPRET": "1", "BAKEOFF_DEVICE": "cpu"})  # fmt: skip
    script = "import os, torch, triton; print(torch.__version__, triton.__version__, "
    script += "os.environ.get('TRITON_INTERPRET'), os.environ.get('BAKEOFF_DEVICE'))"
    text, is_error = tools.call("run_command", {"command": f'python3 -c "{script}"'})
    assert not is_error and f"{torch.__version__} {triton.__version__} 1 None" in text, text
