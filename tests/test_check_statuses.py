"""Every closed status through the real harness (judge and child processes) on the CPU."""

import json
import shutil
from functools import partial
from pathlib import Path

import pytest

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.freeze import freeze, measure_baseline
from kernel_bakeoff.scripts.verdict import Status

from .conftest import ROOT

SMALL = {"samples": 5, "warmup": 2, "trials": 2}
RMS = "x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight"


def source(body: str, imports: str = "import torch") -> str:
    return f"{imports}\n\n\ndef rmsnorm(x, weight, eps=1e-6):\n    {body}\n"


CASES = {
    "syntax_error": (
        "def rmsnorm(x, weight eps=1e-6):\n    return x\n",
        Status.COMPILE_ERROR,
        "SyntaxError",
    ),
    "import_error": (
        "import no_such_module_for_bakeoff\n",
        Status.COMPILE_ERROR,
        "no_such_module_for_bakeoff",
    ),
    "missing_entry": ("def layernorm(x, weight):\n    return x\n", Status.COMPILE_ERROR, "rmsnorm"),
    "raises": (
        source("raise ValueError('bad block size')"),
        Status.RUNTIME_ERROR,
        "ValueError: bad block size",
    ),
    "out_of_memory": (
        source("return torch.empty(1 << 60, dtype=torch.uint8)"),
        Status.RUNTIME_ERROR,
        "out of memory",
    ),
    "segfault": (source("ctypes.string_at(0)", "import ctypes"), Status.CRASHED, "SIGSEGV"),
    "wrong_shape": (source(f"return ({RMS})[:, :-1]"), Status.INCORRECT_SHAPE, "shape"),
    "wrong_dtype": (source(f"return ({RMS}).double()"), Status.INCORRECT_DTYPE, "float64"),
    "not_a_tensor": (source(f"return ({RMS}).tolist()"), Status.INCORRECT_DTYPE, "list"),
    "nan": (
        source(f"out = {RMS}\n    out[3, 5] = float('nan')\n    return out"),
        Status.INCORRECT_NUMERICAL,
        "NaN",
    ),
}


@pytest.fixture(scope="session")
def small_task(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("statuses") / "task"
    measure = partial(
        measure_baseline, **SMALL
    )  # the listed sizes alone: tests/test_other_sizes.py
    return freeze(ROOT / "tests/corpus/rmsnorm_op", out, measure=measure, other_sizes=False)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", list(CASES))
def test_status(name, small_task, tmp_path):
    text, status, words = CASES[name]
    verdict = check(small_task, write(tmp_path, name, text), **SMALL)
    assert verdict.status is status, verdict.reason
    assert [w.status for w in verdict.workloads] == [status, status]
    if status is Status.RUNTIME_ERROR:  # it ran, and failed in its calls: their time is kept
        assert all(w.candidate_seconds is not None for w in verdict.workloads)
    if words:
        assert words in verdict.reason


def test_a_check_that_names_no_sample_count_takes_the_hosts(small_task, tmp_path, monkeypatch):
    """BAKEOFF_SAMPLES: the candidate's and the baseline's samples beside it, unless named."""
    monkeypatch.setenv("BAKEOFF_SAMPLES", "6")
    text = source(f"return {RMS}")
    unnamed = {k: v for k, v in SMALL.items() if k != "samples"}
    verdict = check(small_task, write(tmp_path, "plain", text), **unnamed)
    assert verdict.status is Status.PASSED, verdict.reason
    for w in verdict.workloads:
        assert w.timing.sample_count == 6 == w.baseline_timing.sample_count
    monkeypatch.setenv("BAKEOFF_SAMPLES", "4")
    with pytest.raises(BadInput, match="BAKEOFF_SAMPLES: must be a whole number of at least 5"):
        check(small_task, write(tmp_path, "plain", text), **unnamed)


def test_a_hosts_cpu_cache_is_the_one_its_checks_flush(small_task, tmp_path, monkeypatch):
    """BAKEOFF_CPU_LLC_MIB: the cache the judge's children flush and the machine they record;
    a value that is not a size is refused before any child starts."""
    text = source(f"return {RMS}")
    monkeypatch.setenv("BAKEOFF_CPU_LLC_MIB", "0.5")
    verdict = check(small_task, write(tmp_path, "plain", text), **SMALL)
    assert verdict.status is Status.PASSED, verdict.reason
    assert verdict.flush_bytes == 1 << 20, verdict  # twice the cache, in the children
    monkeypatch.setenv("BAKEOFF_CPU_LLC_MIB", "-1")
    with pytest.raises(BadInput, match="BAKEOFF_CPU_LLC_MIB: must be a positive number of MiB"):
        check(small_task, write(tmp_path, "plain", text), **SMALL)


def test_passed_verdict_carries_timing_speedup_and_costs(small_task, tmp_path):
    text = source(f"print('hello from the candidate')\n    return {RMS}")
    verdict = check(small_task, write(tmp_path, "chatty", text), **SMALL)
    assert verdict.status is Status.PASSED and verdict.reason is None
    baseline = json.loads((small_task / "baseline.json").read_text())["workloads"]
    for w in verdict.workloads:
        t = w.timing
        assert t.clock == "host" and t.sample_count == 5 == len(t.samples_ms)
        assert t.min_ms <= t.median_ms <= t.max_ms and t.spread_ms >= 0
        assert t.wall_ms_per_call > 0
        # the frozen baseline was timed again beside the candidate, as a drift detector: the
        # speedup's denominator is still the figure taken at freeze, the same for every candidate
        assert w.baseline_timing.sample_count == 5
        assert w.baseline_ms == w.frozen_baseline_ms == baseline[w.workload]["median_ms"]
        assert w.speedup == pytest.approx(w.baseline_ms / t.median_ms)
        assert t.host_call_ms > 0
        assert t.overhang_ms == []  # the host clock has no streams to audit
        assert 0 <= w.max_rel_error <= w.tolerance == 2e-5
    assert verdict.speedup > 0 and verdict.device == "cpu"
    assert verdict.harness_seconds > 0 and verdict.candidate_seconds > 0
    # where the candidate's time went, per workload: together no more than its whole time
    spent = [w.candidate_seconds for w in verdict.workloads]
    assert all(s > 0 for s in spent) and sum(spent) <= verdict.candidate_seconds
    assert "hello from the candidate" in verdict.output_tail
    assert len(verdict.oracle_sha256) == 64


def test_without_side_by_side_the_frozen_figure_is_the_denominator(small_task, tmp_path):
    verdict = check(
        small_task, write(tmp_path, "plain", source(f"return {RMS}")), side_by_side=False, **SMALL
    )
    baseline = json.loads((small_task / "baseline.json").read_text())["workloads"]
    for w in verdict.workloads:
        assert w.baseline_timing is None
        assert w.baseline_ms == w.frozen_baseline_ms == baseline[w.workload]["median_ms"]


def test_a_baseline_that_moved_from_its_frozen_figure_is_retimed_and_named(small_task, tmp_path):
    """The frozen figures are written 1000 times the baseline's real time (spread 0), so its
    run beside the candidate moves beyond both spreads whatever this machine's load: the judge
    re-times it once, names the drift, and still divides by the frozen figure."""
    task = tmp_path / "task"
    shutil.copytree(small_task, task)
    for p in [task, *task.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    data = json.loads((task / "baseline.json").read_text())
    for wl in data["workloads"].values():
        wl.update(median_ms=wl["median_ms"] * 1000, spread_ms=0.0)
    (task / "baseline.json").write_text(json.dumps(data))
    (task / manifest.MANIFEST).unlink()
    manifest.write(task)
    verdict = check(task, write(tmp_path, "plain", source(f"return {RMS}")), **SMALL)
    assert verdict.status is Status.PASSED, verdict.reason
    assert verdict.harness_phases["baseline_retime_s"] > 0  # timed beside it a second time
    for w in verdict.workloads:
        frozen = data["workloads"][w.workload]["median_ms"]
        assert w.drift and "the machine drifted" in w.drift and f"{frozen:.4g} ms" in w.drift
        assert w.baseline_ms == w.frozen_baseline_ms == frozen
        assert w.speedup == pytest.approx(frozen / w.timing.median_ms)


def test_each_workload_gets_its_own_status(small_task, tmp_path):
    text = source(f"return {RMS} if x.shape[0] == 64 else torch.zeros_like(x)")
    verdict = check(small_task, write(tmp_path, "one_wrong", text), **SMALL)
    first, second = verdict.workloads
    assert first.status is Status.PASSED and first.speedup > 0
    assert second.status is Status.INCORRECT_NUMERICAL
    assert verdict.status is Status.INCORRECT_NUMERICAL and verdict.speedup is None
    assert verdict.reason.startswith("workload 'wide_16': trial 1")


def test_hang_times_out_and_the_next_check_is_unaffected(small_task, tmp_path):
    text = source(
        f"if x.shape[0] == 16:\n        time.sleep(600)\n    return {RMS}",
        "import time\nimport torch",
    )
    verdict = check(small_task, write(tmp_path, "hang", text), timeout_s=8, **SMALL)
    first, second = verdict.workloads
    assert first.status is Status.PASSED
    assert second.status is Status.TIMEOUT and "8 s" in second.reason
    assert verdict.status is Status.TIMEOUT
    after = check(small_task, write(tmp_path, "fine", source(f"return {RMS}")), **SMALL)
    assert after.status is Status.PASSED, after.reason


def test_crash_in_a_later_workload_keeps_the_earlier_result(small_task, tmp_path):
    text = source(
        f"if x.shape[0] == 16:\n        os.kill(os.getpid(), 9)\n    return {RMS}",
        "import os\nimport torch",
    )
    verdict = check(small_task, write(tmp_path, "killed", text), **SMALL)
    first, second = verdict.workloads
    assert first.status is Status.PASSED
    assert second.status is Status.CRASHED and "SIGKILL" in second.reason


def test_candidate_directory_and_candidate_env(small_task, tmp_path):
    """A directory candidate is read like the frozen sources; candidate_env reaches it."""
    (tmp_path / "cand").mkdir()
    text = source(
        f"assert os.environ['TUNED_BLOCK'] == '128'\n    return {RMS}", "import os\nimport torch"
    )
    (tmp_path / "cand" / "kernel.py").write_text(text)
    verdict = check(small_task, tmp_path / "cand", candidate_env={"TUNED_BLOCK": "128"}, **SMALL)
    assert verdict.status is Status.PASSED, verdict.reason


def test_bad_input(small_task, tmp_path):
    good = write(tmp_path, "good", source(f"return {RMS}"))
    with pytest.raises(BadInput, match="does not exist"):
        check(tmp_path / "nowhere", good)
    with pytest.raises(BadInput, match="candidate does not exist"):
        check(small_task, tmp_path / "missing.py")
    (tmp_path / "unfrozen").mkdir()
    with pytest.raises(BadInput, match="not a frozen task directory"):
        check(tmp_path / "unfrozen", good)
    damaged = Path(shutil.copytree(small_task, tmp_path / "damaged"))
    spec = damaged / "spec.json"
    spec.chmod(0o644)
    spec.write_text(spec.read_text().replace("rows_64", "rows_65"))
    with pytest.raises(BadInput, match="modified"):
        check(damaged, good)


def test_baseline_that_fails_its_own_check_cannot_be_frozen(tmp_path):
    op = Path(shutil.copytree(ROOT / "tests/corpus/rmsnorm_op", tmp_path / "op"))
    (op / "kernel.py").write_text(source("raise RuntimeError('not implemented')"))
    # the oracle probe (scripts/oracle_probe.py) runs the reference first, and says it raised
    with pytest.raises(BadInput, match="the reference raised RuntimeError: not implemented"):
        freeze(op, tmp_path / "task", measure=partial(measure_baseline, **SMALL))
    assert not (tmp_path / "task").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["op"]
