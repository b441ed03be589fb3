"""tf32x3 (the fp32 GEMM template's default on NVIDIA) is refused by the harness where an op's
tolerance is tighter than it reaches, and passes at fp32's default tolerance.

GPU only (the CPU interpreter ignores tl.dot's input_precision: its GEMM is numpy's fp32).
`BAKEOFF_PRECISION_ON_CPU=1` runs the same checks under TRITON_INTERPRET=1, which exercises the
harness's refusal (the interpreter's fp32 sums in another order than torch's: about 1e-7 apart)
but not tf32x3's own error."""

import os
import shutil
from pathlib import Path

import pytest
import torch

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.backends import kernel_templates as kt
from kernel_bakeoff.tasks.backends.match import Match

ON_CPU = os.environ.get("BAKEOFF_PRECISION_ON_CPU") == "1"
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not (torch.cuda.is_available() or ON_CPU), reason="needs a CUDA device"),
]

OP = """name = "matmul_fp32"
kind = "gemm"
language = "torch"
entry = "kernel.py:matmul"

[[inputs]]
name = "a"
shape = ["M", "K"]
dtype = "float32"

[[inputs]]
name = "b"
shape = ["K", "N"]
dtype = "float32"

[[workloads]]
name = "square"
dims = {{ M = {n}, K = {n}, N = {n} }}
{tolerance}"""
KERNEL = "import torch\n\n\ndef matmul(a, b):\n    return torch.matmul(a, b)\n"
CANDIDATE = """import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_gemm_impl", Path(__file__).with_name("impl.py"))
_impl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_impl)


def matmul(a, b):
    return _impl.matmul(a, b)
"""


def _frozen(tmp_path: Path, name: str, tolerance: str, n: int) -> Path:
    from kernel_bakeoff.scripts.freeze import freeze

    op = tmp_path / name
    op.mkdir()
    (op / "op.toml").write_text(OP.format(n=n, tolerance=tolerance))
    (op / "kernel.py").write_text(KERNEL)
    return freeze(op, tmp_path / f"{name}-task", other_sizes=False, probe_oracle=False)


def test_tf32x3_is_refused_where_the_tolerance_is_tighter(tmp_path):
    n = 64 if ON_CPU else 2048
    m = Match("matmul", "route", "float32", {"w": [n, n]}, ["in0", "in1"], {"epilogue": []})
    _, default = kt.space(m, "nvidia")
    assert default["precision"] == "tf32x3"  # what Discover proposes for an fp32 GEMM
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "kernel.py").write_text(CANDIDATE)
    (cand / "impl.py").write_text(kt.render_impl(m, default))
    tight = _frozen(tmp_path, "tight", "\n[tolerance]\nfloat32 = 1e-9\n", n)
    loose = _frozen(tmp_path, "loose", "", n)  # fp32's default (scripts/spec.py)
    refused = check(tight, cand, quick=True)
    assert refused.status is Status.INCORRECT_NUMERICAL, refused.reason
    passed = check(loose, cand, quick=True)
    assert passed.status is Status.PASSED, passed.reason
    assert any(w.triton_kernels for w in passed.workloads)  # the template ran, not torch
    shutil.rmtree(cand)
