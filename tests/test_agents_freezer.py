"""oracle_freezer: the scripted model reads a kernel directory that has no spec and answers with
one; an answer the spec loader refuses goes back once with its error; the written op.toml then
freezes as usual, and the input directory is left as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from scripts.formats import load_spec
from tasks.agents.freezer import write_spec
from tests.agent_env import held_key, settings_for
from tests.conftest import EXAMPLES
from tests.scripted_api import ScriptedAPI, reply, tool

SPEC = {
    "name": "softmax",
    "kind": "reduction",
    "language": "triton",
    "entry": "kernel.py:softmax",
    "inputs": [{"name": "x", "shape": ["M", "N"], "dtype": "float32", "scale": 3.0}],
    "workloads": [{"name": "small", "dims": {"M": 8, "N": 100}}],
    "flops": "5*M*N",
}


def test_oracle_freezer_writes_a_spec_that_loads(tmp_path):
    kernel_dir = tmp_path / "specless"
    shutil.copytree(EXAMPLES / "softmax_triton", kernel_dir)
    (kernel_dir / "op.toml").unlink()
    before = sorted(p.name for p in kernel_dir.iterdir())
    steps = [
        reply(tool("list_files", path=".")),
        reply(tool("read_file", path="kernel.py")),
        reply(tool("write_file", path="op.toml", content="name = 'x'")),
        reply(tool("submit", **(SPEC | {"entry": "kernel.py:soft_max"}))),  # no such function
        reply(tool("submit", **SPEC)),
    ]
    with held_key(), ScriptedAPI(steps) as api:
        out = write_spec(kernel_dir, tmp_path / "with-spec", tmp_path / "work", settings_for(api))
        results = api.tool_results()
    assert "kernel.py" in results[0]["content"] and "def softmax" in results[1]["content"]
    assert results[2]["is_error"] and "writes nothing" in results[2]["content"]
    assert results[3]["is_error"] and "defines no 'soft_max'" in results[3]["content"]
    spec, src = load_spec(out)
    assert spec.entry == "kernel.py:softmax" and spec.workloads[0].dims == {"M": 8, "N": 100}
    assert sorted(p.name for p in kernel_dir.iterdir()) == before  # the input is untouched
    from functools import partial

    from scripts.freeze import freeze, measure_baseline

    task = freeze(out, tmp_path / "task", partial(measure_baseline, samples=5))
    assert (task / "MANIFEST.json").is_file() and (task / "baseline_src" / "op.toml").is_file()


KERNEL_ONLY = """import torch


def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2
"""
DOUBLE = {
    "name": "double",
    "kind": "elementwise",
    "language": "torch",
    "entry": "kernel.py:double",
    "inputs": [{"name": "x", "shape": ["N"], "dtype": "float32"}],
    "workloads": [{"name": "small", "dims": {"N": 4096}}],
}


def kernel_only(tmp_path):
    kernel_dir = tmp_path / "just_a_kernel"
    kernel_dir.mkdir()
    (kernel_dir / "kernel.py").write_text(KERNEL_ONLY)
    return kernel_dir


def test_without_a_model_a_specless_directory_is_one_line_and_exit_2(tmp_path):
    from tests.conftest import run_cli

    kernel_dir = kernel_only(tmp_path)
    for command in (["freeze", str(kernel_dir)], ["run", str(kernel_dir)]):
        done = run_cli(*command, cwd=tmp_path, env={"ANTHROPIC_API_KEY": ""})
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert str(kernel_dir) in line and "no op spec here" in line
        assert "write op.toml, or set ANTHROPIC_API_KEY" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["just_a_kernel"]  # nothing written
    assert [p.name for p in kernel_dir.iterdir()] == ["kernel.py"]


@pytest.mark.slow
def test_bakeoff_run_on_a_specless_directory_has_oracle_freezer_write_the_spec(tmp_path):
    """The scripted model answers oracle_freezer with the spec; the run freezes and reports
    from it. Its one optimize round submits nothing (patience 1), so the lane ends failed."""
    import json

    from tests.agent_env import AGENT_ENV
    from tests.conftest import run_cli

    kernel_dir = kernel_only(tmp_path)
    steps = [
        reply(tool("read_file", path="kernel.py")),
        reply(tool("submit", **DOUBLE)),
        reply(tool("submit", summary="nothing checked this round")),
    ]
    runs = tmp_path / "runs"
    with held_key() as key, ScriptedAPI(steps) as api:
        env = AGENT_ENV | {
            "ANTHROPIC_API_KEY": key,
            "ANTHROPIC_BASE_URL": api.base_url,
            "BAKEOFF_AGENT_PATIENCE": "1",
        }
        done = run_cli("run", str(kernel_dir), "--budget", "1", "--samples", "5",
                       "--runs-root", str(runs), "--json", cwd=tmp_path, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert api.remaining() == 0
        assert "oracle_freezer" in api.turns[0]["body"]["messages"][0]["content"]
    said = [ln for ln in done.stderr.splitlines() if ln.startswith("no op spec in")]
    assert len(said) == 1 and "oracle_freezer wrote" in said[0], done.stderr[-3000:]
    out = json.loads(done.stdout)
    run_dir = Path(out["run_dir"])
    assert run_dir.parent == runs and run_dir.name.startswith("double-optimize-")
    assert f"kept as {run_dir / 'op.toml'}" in said[0]
    task = run_dir / "task"
    assert (task / "MANIFEST.json").is_file()
    frozen_spec = (task / "baseline_src" / "op.toml").read_text()
    assert (run_dir / "op.toml").read_text() == frozen_spec  # the written spec, kept here
    spec, _ = load_spec(task / "baseline_src")
    assert spec.entry == "kernel.py:double" and spec.workloads[0].dims == {"N": 4096}
    assert out["baseline_ms"]["small"] > 0 and Path(out["report"]).is_file()
    assert out["winner"] is None and out["lanes"][0]["status"] == "failed"
    assert [p.name for p in kernel_dir.iterdir()] == ["kernel.py"]  # the input is untouched
    (staged,) = (runs / "specs").iterdir()  # where the copy with the spec lives, as said
    assert str(staged / "input" / "op.toml") in said[0]
