"""`bakeoff run` end to end in a subprocess (Prefect's embedded server), and its refusals."""

import itertools
import json
import time
from datetime import datetime
from pathlib import Path

import pytest

from .conftest import EXAMPLES, run_cli

pytestmark = pytest.mark.slow

KERNEL = str(EXAMPLES / "rmsnorm_torch")


@pytest.fixture
def env(tmp_path):
    return {"BAKEOFF_LOCK_DIR": str(tmp_path / "locks"), "BAKEOFF_CPU_SLOTS": "2"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--mode", "turbo"], "mode: unknown mode 'turbo'; use optimize, author or bakeoff"),
        (["--mode", "bakeoff", "--backends", "triton,fortran"], "unknown backend 'fortran'"),
        (["--budget", "0"], "budget: must be at least 1 iteration, got 0"),
        (["--gpu-ids", "0,7"], "gpu_ids: device"),
    ],
)
def test_bad_input_is_one_line_before_anything_starts(args, message, tmp_path, env):
    started = time.monotonic()
    proc = run_cli("run", KERNEL, "--runs-root", str(tmp_path / "runs"), *args, env=env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("bakeoff run: error: ") and message in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    assert not (tmp_path / "runs").exists()
    assert time.monotonic() - started < 20  # refused before a Prefect server was started


def test_kernel_that_does_not_freeze_is_refused(tmp_path, env):
    op = tmp_path / "broken_op"
    op.mkdir()
    (op / "op.toml").write_text((EXAMPLES / "rmsnorm_torch" / "op.toml").read_text())
    (op / "kernel.py").write_text("def rmsnorm(x, weight, eps=1e-6):\n    raise ValueError('no')\n")
    proc = run_cli("run", str(op), "--runs-root", str(tmp_path / "runs"), env=env)
    assert proc.returncode == 2, proc.stderr
    assert "ValueError: no" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def spans(result):
    out = []
    for lane in result["lanes"]:
        if lane["lease_start"] and not lane["reused"]:
            start, end = (datetime.fromisoformat(lane[k]) for k in ("lease_start", "lease_end"))
            out.append((lane["device"], start, end))
    return out


def test_full_run_overlaps_lanes_reports_and_second_run_reuses(tmp_path, env):
    args = ("run", KERNEL, "--mode", "bakeoff", "--budget", "1", "--json")
    first = run_cli(*args, "--runs-root", str(tmp_path / "runs"), env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    result = json.loads(first.stdout)

    assert [lane["key"] for lane in result["lanes"]][0] == "torch"
    assert result["lanes"][0]["status"] == "completed"
    for lane in result["lanes"]:  # without a model, an author lane is skipped and says why
        assert lane["status"] == "completed" or (
            lane["status"] == "skipped" and lane["reason"].startswith("skipped: ")
        ), lane
    assert set(result["baseline_ms"]) == {"tokens_256", "tokens_1k"}
    assert result["candidates"] and all(
        {"language", "mode", "status", "speedup", "speedups", "path"} <= set(c)
        for c in result["candidates"]
    )
    assert (result["winner"] is None) or result["winner"]["status"] == "winner"
    report = open(result["report"]).read()
    assert "kept" in report if result["winner"] is None else "## Winner" in report

    leased = spans(result)
    assert len(leased) >= 2
    assert any(max(a[1], b[1]) < min(a[2], b[2]) for a, b in itertools.combinations(leased, 2))
    for a, b in itertools.combinations(leased, 2):
        if a[0] == b[0]:
            assert a[2] <= b[1] or b[2] <= a[1], f"device {a[0]} held by two lanes at once"

    result_files = sorted(Path(result["run_dir"]).glob("lanes/*/lane_result.json"))
    stamps = [f.stat().st_mtime_ns for f in result_files]
    second = run_cli(*args[:-1], "--runs-root", str(tmp_path / "runs"), env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    out = second.stdout
    assert "torch (optimize)" in out and out.count(" reused ") == len(result["lanes"])
    assert "speedup over the frozen baseline" in out  # the ranking table
    assert ("\nwinner:" in out) != ("original kernel is kept" in out)
    assert [f.stat().st_mtime_ns for f in result_files] == stamps
    again = json.loads((Path(result["run_dir"]) / "report.json").read_text())
    assert [r["speedup"] for r in again["rows"]] == [c["speedup"] for c in result["candidates"]]
