"""`bakeoff check` on the command line: the shipped examples against their own baselines, exit codes,
the table, and a KernelBench problem frozen on the fly."""

import json
import math
from functools import partial

import pytest

from kernel_bakeoff.scripts.freeze import freeze, measure_baseline

from .agent_kernels import tiny_softmax
from .conftest import EXAMPLES, cli_in_process


def within_noise(w: dict, base: dict) -> bool:
    """|speedup - 1| within what the relative spreads (IQR / median) of both sides allow. The
    speedup's denominator is the frozen baseline, so its spread is the freeze's; a verdict that
    names a drift (the baseline beside the candidate moved beyond both spreads) has said why."""
    t = w["timing"]
    noise = t["spread_ms"] / t["median_ms"] + base["spread_ms"] / base["median_ms"]
    near = abs(math.log(w["speedup"])) <= math.log(1 + max(0.25, 2 * noise))
    return near or bool(w.get("drift"))


@pytest.mark.parametrize("example, samples", [("rmsnorm_torch", 15), ("softmax_triton", 8)])
def test_example_checked_against_its_own_baseline_passes_at_speedup_one(
    example, samples, tmp_path, capfd
):
    options = {"samples": samples, "warmup": 3}
    source = EXAMPLES / example
    if example == "softmax_triton":  # interpreted here: its workloads made small
        source = tiny_softmax(tmp_path / example)
    task = freeze(source, tmp_path / "task", measure=partial(measure_baseline, **options))
    kernel = source / "kernel.py"
    baseline = json.loads((task / "baseline.json").read_text())["workloads"]
    # A host clock on two shared cores: one check of the interpreted Triton kernel read 1.93x
    # (CI, 2026-12-02), another 0.63x. A second check must then agree: a bias reads off twice.
    for _ in range(2):
        done = cli_in_process(
            capfd, "check", str(task), str(kernel), "--json", "--samples", str(samples)
        )
        assert done.returncode == 0, done.stdout + done.stderr
        verdict = json.loads(done.stdout)
        assert verdict["status"] == "PASSED"
        assert verdict["sizes_checked"]  # the sizes freeze added, checked and not timed
        timed = [w for w in verdict["workloads"] if not w["checked_only"]]
        for w in timed:
            assert w["timing"]["sample_count"] == samples == baseline[w["workload"]]["sample_count"]
        off = [
            (w["workload"], w["speedup"])
            for w in timed
            if not within_noise(w, baseline[w["workload"]])
        ]
        if not off:
            break
    assert not off, (off, verdict["workloads"])


def test_failing_candidate_exits_1_with_the_table_and_its_output(tmp_path, capfd):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def rmsnorm(x, weight, eps=1e-6):\n    print('about to fail')\n    raise ValueError('no')\n"
    )
    done = cli_in_process(
        capfd, "check", str(EXAMPLES / "rmsnorm_torch"), str(bad), "--samples", "3", cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert "RUNTIME_ERROR" in done.stdout and "ValueError: no" in done.stdout
    assert "about to fail" in done.stdout  # the tail of the candidate's output
    assert "tokens_256" in done.stdout and "tokens_1k" in done.stdout


def test_unusable_inputs_exit_2_with_one_line(tmp_path, capfd):
    missing = cli_in_process(
        capfd, "check", str(tmp_path / "no_task"), str(EXAMPLES / "rmsnorm_torch" / "kernel.py")
    )
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1 and "no_task" in missing.stderr
    no_candidate = cli_in_process(
        capfd, "check", str(EXAMPLES / "rmsnorm_torch"), str(tmp_path / "nope.py")
    )
    assert no_candidate.returncode == 2 and "candidate does not exist" in no_candidate.stderr
    (tmp_path / "empty").mkdir()
    not_a_task = cli_in_process(
        capfd, "check", str(tmp_path / "empty"), str(EXAMPLES / "rmsnorm_torch" / "kernel.py")
    )
    assert not_a_task.returncode == 2 and not_a_task.stderr.count("\n") == 1


PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return [2.0]
"""

CANDIDATE = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x.clamp_min(0) * self.scale
"""


def test_kernelbench_problem_is_frozen_once_then_checked(tmp_path, capfd):
    """Checked twice, a problem is frozen once (runs/tasks/<op>, as `bakeoff freeze` would):
    one oracle id, one denominator."""
    pytest.importorskip("kernel_bakeoff.scripts.formats.kernelbench")
    (tmp_path / "21_relu_scale.py").write_text(PROBLEM)
    (tmp_path / "candidate.py").write_text(CANDIDATE)
    args = ("check", str(tmp_path / "21_relu_scale.py"), str(tmp_path / "candidate.py"))
    task = tmp_path / "runs" / "tasks" / "21_relu_scale"
    said, frozen = [], []
    for _ in range(2):
        done = cli_in_process(capfd, *args, "--samples", "5", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "PASSED  speedup" in done.stdout
        said.append(done.stderr)
        frozen.append((task / "baseline.json").read_text())
    assert "frozen now" in said[0] and str(task.relative_to(tmp_path)) in said[0], said[0]
    assert "frozen earlier from it" in said[1], said[1]
    assert frozen[0] == frozen[1]  # the second check divided by the first one's baseline
    assert [p.name for p in task.parent.iterdir()] == ["21_relu_scale"]


KB = EXAMPLES / "kernelbench"


def _one_line_naming_both(done, candidate: str, *fragments: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""  # no table
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("bakeoff check: error: "), line
    for fragment in (candidate, "not a candidate for", "matmul_gelu.py", *fragments):
        assert fragment in line, line


def test_another_problems_candidate_is_one_line_before_any_freeze(tmp_path, capfd):
    cand = KB / "candidates" / "conv2d_relu_bias_new.py"  # ModelNew(in_channels, ...)
    done = cli_in_process(capfd, "check", str(KB / "matmul_gelu.py"), str(cand), cwd=tmp_path)
    _one_line_naming_both(done, str(cand), "does not match", "get_init_inputs() gives")
    assert not (tmp_path / "runs").exists()  # refused before anything was frozen


@pytest.mark.parametrize(
    "make, fragments",
    [
        (lambda d: d / "junk", ["is read through its matmul_gelu.py", "it has none"]),
        (lambda d: d / "junk" / "notes.txt", ["is a .py defining ModelNew"]),
        (lambda d: d / "junk" / "matmul_gelu.py", ["defines no class ModelNew"]),
    ],
    ids=["a directory of junk", "a file of another format", "a .py without ModelNew"],
)
def test_a_kernelbench_candidate_that_is_not_one_is_one_line(tmp_path, capfd, make, fragments):
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("not a kernel\n")
    (junk / "matmul_gelu.py").write_text("def forward(x):\n    return x\n")
    if make(tmp_path).name == "junk":
        (junk / "matmul_gelu.py").unlink()
    cand = make(tmp_path)
    done = cli_in_process(capfd, "check", str(KB / "matmul_gelu.py"), str(cand), cwd=tmp_path)
    _one_line_naming_both(done, str(cand), *fragments)
    assert not (tmp_path / "runs").exists()
