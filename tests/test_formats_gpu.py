"""The shipped examples of every format on a real device (CUDA or ROCm); skipped without one."""

import pytest
import torch

from kernel_bakeoff.scripts.compare import rel_error
from kernel_bakeoff.scripts.formats import load_spec, module_for
from kernel_bakeoff.scripts.freeze import freeze, load_task

from .conftest import EXAMPLES

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm device"),
]

TS = EXAMPLES / "flashinfer_traceset"


def _agree(spec, fmt, src, a, b, seed=0):
    for wl in spec.workloads:
        inputs = fmt.make_inputs(spec, src, wl, seed, "cuda")
        assert all(t.is_cuda for t in inputs if isinstance(t, torch.Tensor))
        out, expected = a(*inputs), b(*inputs)
        assert out.is_cuda and out.shape == expected.shape and out.dtype == expected.dtype
        err = rel_error(out, expected)
        assert err <= spec.tolerance_for(str(out.dtype).removeprefix("torch.")), (wl.name, err)


def test_gemm_bias_gelu_on_device_including_a_tensor_core_sized_problem():
    spec, src = load_spec(EXAMPLES / "gemm_bias_gelu")
    fmt = module_for(spec.format)
    kernel = fmt.load_callable(spec, src, spec.entry, "cuda")
    ref = fmt.load_callable(spec, src, spec.reference, "cuda")
    _agree(spec, fmt, src, kernel, ref)
    g = torch.Generator(device="cuda").manual_seed(0)
    x, w = (
        torch.randn(s, generator=g, device="cuda").half() * 0.05 for s in ((1024, 768), (768, 512))
    )
    bias = torch.randn(512, generator=g, device="cuda").half()
    big = kernel(x, w, bias, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    assert rel_error(big, ref(x, w, bias)) <= spec.tolerance_for("float16")


@pytest.mark.parametrize("op", ["rmsnorm_h256", "silu_and_mul_d256"])
def test_trace_set_baseline_and_triton_solution_on_device(op):
    spec, src = load_spec(TS, op=op)
    fmt = module_for(spec.format)
    ref = fmt.load_callable(spec, src, spec.reference, "cuda")
    _agree(spec, fmt, src, fmt.load_callable(spec, src, spec.entry, "cuda"), ref)
    (other,) = (TS / "solutions" / "triton-lab").rglob(f"{op}/*.json")
    _agree(spec, fmt, src, fmt.load_callable(spec, src, spec.entry, "cuda", candidate=other), ref)


@pytest.mark.parametrize("name", ["matmul_gelu", "conv2d_relu_bias"])
def test_kernelbench_candidate_on_device(name):
    spec, src = load_spec(EXAMPLES / "kernelbench" / f"{name}.py")
    fmt = module_for(spec.format)
    ref = fmt.load_callable(spec, src, spec.entry, "cuda")
    cand_path = EXAMPLES / "kernelbench" / "candidates" / f"{name}_new.py"
    cand = fmt.load_callable(spec, src, spec.entry, "cuda", candidate=cand_path)
    assert next(ref.module.parameters()).is_cuda
    _agree(spec, fmt, src, cand, ref)


@pytest.mark.parametrize(
    "path, options",
    [
        (EXAMPLES / "gemm_bias_gelu", {}),
        (EXAMPLES / "kernelbench" / "matmul_gelu.py", {}),
        (TS, {"op": "rmsnorm_h256", "solution": "triton-lab"}),
    ],
)
def test_every_format_freezes_on_device(tmp_path, path, options):
    task = freeze(path, tmp_path / "task", **options)
    spec, _, baseline = load_task(task)
    assert baseline.device == "cuda"
    assert {w.status.value for w in baseline.workloads.values()} == {"PASSED"}
