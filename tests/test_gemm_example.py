import pytest
import torch

from kernel_bakeoff.scripts.compare import rel_error
from kernel_bakeoff.scripts.formats import load_spec, module_for
from kernel_bakeoff.scripts.freeze import freeze, load_task
from kernel_bakeoff.scripts.spec import OpKind

from .conftest import EXAMPLES

GEMM = EXAMPLES / "gemm_bias_gelu"


def test_gemm_example_is_a_native_triton_gemm():
    spec, src = load_spec(GEMM)
    assert (spec.format, spec.kind, spec.language) == ("native", OpKind.gemm, "triton")
    assert spec.flops == "2*M*N*K"
    dims = [w.dims for w in spec.workloads]
    assert dims == [{"M": 64, "N": 96, "K": 128}, {"M": 50, "N": 72, "K": 100}]
    assert all(eval(spec.flops, {}, d) > 0 for d in dims)


@pytest.mark.parametrize("workload", ["tiles", "ragged"])
def test_fused_epilogue_matches_the_reference(workload):
    spec, src = load_spec(GEMM)
    fmt = module_for(spec.format)
    kernel = fmt.load_callable(spec, src, spec.entry, "cpu")
    ref = fmt.load_callable(spec, src, spec.reference, "cpu")
    x, w, bias = fmt.make_inputs(spec, src, spec.workload(workload), 4, "cpu")
    out, expected = kernel(x, w, bias), ref(x, w, bias)
    assert out.shape == (x.shape[0], w.shape[1]) and out.dtype == torch.float16
    assert rel_error(out, expected) <= spec.tolerance_for("float16")
    # The epilogue is really there: without bias and GELU the answer is far off.
    assert rel_error((x.float() @ w.float()).half(), expected) > 0.1


def test_bias_reaches_every_column_block():
    spec, src = load_spec(GEMM)
    kernel = module_for(spec.format).load_callable(spec, src, spec.entry, "cpu")
    x = torch.zeros(40, 24, dtype=torch.float16)
    w = torch.zeros(24, 70, dtype=torch.float16)
    bias = torch.linspace(-3, 3, 70).half()
    expected = torch.nn.functional.gelu(bias.float()).half().expand(40, 70)
    torch.testing.assert_close(kernel(x, w, bias), expected, rtol=2e-3, atol=2e-3)


def test_gemm_example_freezes_and_verifies(tmp_path):
    task = freeze(GEMM, tmp_path / "gemm")
    spec, src, baseline = load_task(task)
    assert spec.name == "gemm_bias_gelu" and (src / "kernel.py").is_file()
    assert {w.status.value for w in baseline.workloads.values()} == {"PASSED"}
