"""A CUDA or HIP lane ranks only candidates that call their own compiled code: the rule on
controlled verdicts, and the harness naming the functions of a real load_inline extension (a C++
CPU one, built with g++: the same hook sees a CUDA one) that a candidate's checked calls ran."""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze, measure_baseline
from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from kernel_bakeoff.tasks.check.language_rule import NO_EXTENSION, NO_TRITON, ruled
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from tests.agent_kernels import tiny_softmax


def passed(language: str, calls=(), kernels=(), mode: str = "author") -> CandidateResult:
    timing = Timing(clock="host", sample_count=1, median_ms=1.0, min_ms=1.0, max_ms=1.0,
                    spread_ms=0.0, samples_ms=[1.0])  # fmt: skip
    w = WorkloadVerdict(workload="w", status=Status.PASSED, timing=timing, speedup=1.2,
                        triton_kernels=list(kernels), extension_calls=list(calls))  # fmt: skip
    v = Verdict(candidate="c", oracle_sha256="", device="cpu", status=Status.PASSED,
                workloads=[w], speedup=1.2)  # fmt: skip
    ref = CandidateRef(name="c", language=language, mode=mode, path="/nowhere")
    return CandidateResult(candidate=ref, verdict=v)


def test_a_compiled_lane_refuses_a_candidate_that_called_none_of_its_own_code():
    for language, shown in (("cuda", "CUDA"), ("hip", "HIP")):
        refused = ruled(passed(language, kernels=["_rows"])).verdict  # Triton is not its own
        assert refused.status is Status.FLAGGED and refused.speedup is None
        assert refused.reason == NO_EXTENSION.format(language=shown)
        assert "called no compiled kernel of its own" in refused.reason
        assert ruled(passed(language, calls=["ext.rmsnorm"])).verdict.passed
        assert ruled(passed(language, mode="baseline")).verdict.passed  # the input: exempt
    assert ruled(passed("triton", calls=["ext.rmsnorm"])).verdict.reason == NO_TRITON
    assert ruled(passed("torch")).verdict.passed


EXTENSION = '''
import hashlib

import torch
from torch.utils.cpp_extension import load_inline

SOURCE = """
#include <torch/extension.h>
torch::Tensor softmax_rows(torch::Tensor x) { return torch::softmax(x, -1); }
"""
_module = load_inline(
    name="softmax_cpu_" + hashlib.sha256(SOURCE.encode()).hexdigest()[:12],
    cpp_sources=SOURCE,
    functions=["softmax_rows"],
)


def softmax(x):
    return _module.softmax_rows(x)
'''


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler to build an extension")
def test_the_harness_names_the_compiled_functions_a_candidate_called(tmp_path):
    task = freeze(
        tiny_softmax(tmp_path / "softmax"), tmp_path / "task", partial(measure_baseline, samples=3)
    )
    built, plain = tmp_path / "built", tmp_path / "plain"
    for d, source in ((built, EXTENSION),
                      (plain, "import torch\n\ndef softmax(x):\n    return torch.softmax(x, -1)\n")):  # fmt: skip
        d.mkdir()
        (d / "kernel.py").write_text(source)
    ext = check(task, built, timeout_s=600, samples=3, workdir=tmp_path / "w1")
    torch_only = check(task, plain, timeout_s=300, samples=3, workdir=tmp_path / "w2")
    assert ext.passed, ext.reason
    (name,) = ext.extension_calls
    assert name.startswith("softmax_cpu_") and name.endswith(".softmax_rows")
    assert all(w.extension_calls == [name] for w in ext.workloads) and ext.triton_kernels == []
    assert torch_only.passed and torch_only.extension_calls == []

    def as_cuda(verdict) -> CandidateResult:
        ref = CandidateRef(name="c", language="cuda", mode="author", path=str(Path(built)))
        return CandidateResult(candidate=ref, verdict=verdict)

    assert ruled(as_cuda(ext)).verdict.passed
    refused = ruled(as_cuda(torch_only)).verdict
    assert (
        refused.status is Status.FLAGGED
        and "called no compiled kernel of its own" in refused.reason
    )


# A stand-in for hip-python's `hip.hip` (this machine has no ROCm): the calls HipKernel makes.
STAND_IN_HIP = """
OK = 0
def hipModuleLoadData(code):
    return (OK, "module")
def hipModuleGetFunction(module, name):
    return (OK, object())
def hipModuleLaunchKernel(f, *dims, **kwargs):
    return (OK,)
"""
HIP_CALLER = """
import sys
from kernel_bakeoff.scripts import launches
launches.install_extensions()  # before the candidate imports hip-python, as the child does
from hip import hip
_, fn = hip.hipModuleGetFunction("module", b"axpy")
hip.hipModuleLaunchKernel(fn, 1, 1, 1, 64, 1, 1)  # a warm-up call: not counted
triton, calls = [], []
with launches.counting(triton, calls):
    hip.hipModuleLaunchKernel(fn, 1, 1, 1, 64, 1, 1)
print(triton, calls)
"""


def test_hip_python_launches_count_when_the_candidate_imports_it_after_the_hook(tmp_path):
    import subprocess
    import sys

    (tmp_path / "hip").mkdir()
    (tmp_path / "hip" / "__init__.py").write_text("")
    (tmp_path / "hip" / "hip.py").write_text(STAND_IN_HIP)
    root = Path(__file__).resolve().parents[1]
    env = {"PYTHONPATH": f"{root}:{tmp_path}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", HIP_CALLER], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] ['hip:axpy']"
