"""oracle_freezer: the scripted model reads a kernel directory that has no spec and answers with
one; an answer the spec loader refuses goes back once with its error; the written op.toml then
freezes as usual, and the input directory is left as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.formats import load_spec
from kernel_bakeoff.tasks.agents.freezer import no_spec_here, write_spec
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

    from kernel_bakeoff.scripts.freeze import freeze, measure_baseline

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
def test_bakeoff_run_on_a_specless_directory_has_oracle_freezer_write_the_spec(
    tmp_path, prefect_api_env
):
    """The scripted model answers oracle_freezer with the spec; the run freezes and reports
    from it. Its one optimize round submits nothing (patience 1), so the lane ends failed and,
    nothing judged, the run exits 1."""
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
        env = {
            **AGENT_ENV,
            **prefect_api_env,
            "ANTHROPIC_API_KEY": key,
            "ANTHROPIC_BASE_URL": api.base_url,
            "BAKEOFF_AGENT_PATIENCE": "1",
        }
        done = run_cli("run", str(kernel_dir), "--budget", "1", "--samples", "5",
                       "--runs-root", str(runs), "--json", cwd=tmp_path, env=env)  # fmt: skip
        assert done.returncode == 1, done.stderr[-3000:]
        assert api.remaining() == 0
        assert "oracle_freezer" in api.turns[0]["body"]["messages"][0]["content"]
    said = [ln for ln in done.stderr.splitlines() if ln.startswith("no op spec in")]
    assert len(said) == 1 and "oracle_freezer wrote" in said[0], done.stderr[-3000:]
    out = json.loads(done.stdout)
    run_dir = Path(out["run_dir"])
    # named for the directory: its run directory is known before the model names the op
    assert run_dir.parent == runs and run_dir.name.startswith("just_a_kernel-optimize-")
    assert f"kept as {run_dir / 'op.toml'}" in said[0]
    task = run_dir / "task"
    assert (task / "MANIFEST.json").is_file()
    frozen_spec = (task / "baseline_src" / "op.toml").read_text()
    assert (run_dir / "op.toml").read_text() == frozen_spec  # the written spec, kept here
    spec, _ = load_spec(task / "baseline_src")
    assert spec.entry == "kernel.py:double" and spec.workloads[0].dims == {"N": 4096}
    assert out["baseline_ms"]["small"] > 0 and Path(out["report"]).is_file()
    assert out["winner"] is None and out["lanes"][0]["status"] == "failed"
    assert out["judged"] == 0
    assert [p.name for p in kernel_dir.iterdir()] == ["kernel.py"]  # the input is untouched
    (staged,) = (runs / "specs").iterdir()  # where the copy with the spec lives, as said
    assert str(staged / "input" / "op.toml") in said[0]


SOFTMAX_SPEC = SPEC | {"workloads": [{"name": "small", "dims": {"M": 8, "N": 128}}]}


def specless_softmax_in_a_repo(root: Path):
    """A git repository holding the shipped softmax without its op.toml, committed."""
    import git

    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "tester")
        cw.set_value("user", "email", "tester@example.invalid")
    kernel_dir = root / "ops" / "softmax"
    shutil.copytree(EXAMPLES / "softmax_triton", kernel_dir)
    (kernel_dir / "op.toml").unlink()
    repo.index.add(["ops"])
    repo.index.commit("a softmax without a spec")
    return repo, kernel_dir


@pytest.mark.slow
def test_the_bakeoff_flow_called_directly_writes_the_spec_and_applies_to_the_original(
    prefect_api, tmp_path, monkeypatch
):
    """The flow itself (not the CLI) on a spec-less directory in a git repository, asked to
    apply: oracle_freezer writes the spec in the freeze phase, the model's optimize round wins
    with a candidate that also edits the written op.toml, and the winner lands on a new branch
    of the ORIGINAL repository without that op.toml; the staged copy is left as it was. Then
    `bakeoff apply RUN_DIR` on the same run makes the next branch the same way."""
    import git

    from kernel_bakeoff.flows.bakeoff import bakeoff
    from kernel_bakeoff.tasks.apply.command import apply_run
    from kernel_bakeoff.tasks.models.request import BakeoffRequest
    from kernel_bakeoff.tasks.run.input_identity import recorded
    from tests.agent_env import AGENT_ENV
    from tests.agent_kernels import rows_kernel
    from tests.controlled_timings import control_checks
    from tests.test_agents_lane import (
        CARD,
        check_step,
        prose,
        review_what_is_put_forward,
        submit_round,
    )

    for k, v in (AGENT_ENV | {"BAKEOFF_AGENT_LEARNED_DIR": str(tmp_path / "learned")}).items():
        monkeypatch.setenv(k, v)
    control_checks(monkeypatch, wins="rows64$")  # checked for real, timed by the test: it wins
    repo, kernel_dir = specless_softmax_in_a_repo(tmp_path / "repo")
    head, before = repo.head.commit.hexsha, sorted(p.name for p in kernel_dir.iterdir())
    steps = [
        reply(tool("submit", **SOFTMAX_SPEC)),
        reply(tool("write_file", path="candidates/rows/kernel.py", content=rows_kernel(64))),
        reply(tool("write_file", path="candidates/rows/op.toml", content="# the model's edit\n")),
        check_step("candidates/rows", "rows64"),
        submit_round("rows64"),
        review_what_is_put_forward,
        CARD,
        prose,
    ]
    runs = tmp_path / "runs"
    with held_key(), ScriptedAPI(steps) as api:
        monkeypatch.setenv("BAKEOFF_AGENT_BASE_URL", api.base_url)
        report = bakeoff(BakeoffRequest(kernel_path=str(kernel_dir), budget=1, samples=5,
                                        runs_root=str(runs), apply_to_original=True))  # fmt: skip
        assert api.remaining() == 0
        assert "oracle_freezer" in api.turns[0]["body"]["messages"][0]["content"]
    run_dir = Path(report.run_dir)
    (staged,) = (runs / "specs").iterdir()
    staged = staged / "input"
    source = recorded(run_dir)  # the run records the original, the staged copy apart
    assert source.input == str(kernel_dir) and source.frozen_from == str(staged)
    assert "oracle_freezer wrote" in source.said and report.kernel_path == str(kernel_dir)
    assert (run_dir / "op.toml").read_text() == (staged / "op.toml").read_text()
    assert load_spec(run_dir / "task" / "baseline_src")[0].workloads[0].dims == {"M": 8, "N": 128}
    assert report.winner is not None and report.winner.name == "rows64"
    # the winner on a new branch of the original's repository; op.toml not part of it
    applied = json.loads((run_dir / "apply.json").read_text())
    assert applied["status"] == "committed", applied
    assert applied["repo"] == str(repo.working_tree_dir) and applied["files"] == [
        "ops/softmax/kernel.py"
    ]
    branch = repo.heads[applied["branch"]]
    assert (
        branch.commit.parents[0].hexsha == head
        and "ROWS = 64"
        in (branch.commit.tree / "ops/softmax/kernel.py").data_stream.read().decode()
    )
    assert "ops/softmax/op.toml" not in [b.path for b in branch.commit.tree.traverse()]
    assert f"not committed here: {run_dir / 'op.toml'}" in branch.commit.message
    assert repo.active_branch.name == "main" and repo.head.commit.hexsha == head
    assert not repo.is_dirty(untracked_files=True)
    assert sorted(p.name for p in kernel_dir.iterdir()) == before  # the input is untouched
    # the staged copy: the sources as they were and the written spec, no repository, no patch
    assert (staged / "kernel.py").read_text() == (kernel_dir / "kernel.py").read_text()
    assert sorted(p.name for p in staged.iterdir()) == sorted([*before, "op.toml"])
    with pytest.raises(git.InvalidGitRepositoryError):
        git.Repo(staged, search_parent_directories=True)
    # `bakeoff apply RUN_DIR` reads the same record: the next branch, the same one file
    assert apply_run(run_dir, None, None, as_json=True) == 0
    assert f"{applied['branch']}-2" in [h.name for h in repo.heads]


@pytest.mark.slow
def test_the_bakeoff_flow_without_a_model_fails_with_the_one_reason(
    prefect_api, tmp_path, monkeypatch
):
    from kernel_bakeoff.flows.bakeoff import bakeoff
    from kernel_bakeoff.scripts.errors import BadInput
    from kernel_bakeoff.tasks.agents.settings import forget_key
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    forget_key()
    kernel_dir = kernel_only(tmp_path)
    with pytest.raises(BadInput) as failed:
        bakeoff(
            BakeoffRequest(kernel_path=str(kernel_dir), budget=1, runs_root=str(tmp_path / "runs"))
        )
    assert str(failed.value) == str(no_spec_here(kernel_dir))
    assert "write op.toml, or set ANTHROPIC_API_KEY" in str(failed.value)
    assert not (tmp_path / "runs" / "specs").exists()
    assert [p.name for p in kernel_dir.iterdir()] == ["kernel.py"]
