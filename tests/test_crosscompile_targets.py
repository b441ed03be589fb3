"""The Triton lane's cross-compiler: the shipped softmax and a tl.dot matmul built for gfx942,
gfx950 and sm_90 on this CPU box (in a child without TRITON_INTERPRET)."""

import pytest

from kernel_bakeoff.tasks.backends.triton_xc import amd_registers, cross_compile_in_child
from tests.conftest import EXAMPLES, ROOT

TARGETS = ["gfx942", "gfx950", "sm_90"]
DOT = ROOT / "tests" / "data" / "triton_dot.py"
DOT_SIG = {
    **{p: "*fp16" for p in ("a_ptr", "b_ptr", "c_ptr")},
    **{p: "i32" for p in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn")},
    **{p: "i32" for p in ("stride_cm", "stride_cn")},
    **{p: "constexpr" for p in ("BLOCK_M", "BLOCK_N", "BLOCK_K")},
}


@pytest.fixture(scope="module")
def dot_reports():
    blocks = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}
    reports = cross_compile_in_child(DOT, "matmul_kernel", DOT_SIG, blocks, TARGETS, num_warps=4)
    return {r.target: r for r in reports}


@pytest.fixture(scope="module")
def softmax_reports():
    sig = {
        "x_ptr": "*fp32",
        "y_ptr": "*fp32",
        "n_cols": "i32",
        "stride": "i32",
        "BLOCK": "constexpr",
    }
    file = EXAMPLES / "softmax_triton" / "kernel.py"
    reports = cross_compile_in_child(
        file, "_softmax_row", sig, {"BLOCK": 1024}, TARGETS, num_warps=4
    )
    return {r.target: r for r in reports}


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_dot_uses_mfma_on_cdna(dot_reports, target):
    r = dot_reports[target]
    assert r.ok, r.error
    assert "amdgcn" in r.asm_kinds and "hsaco" in r.asm_kinds
    assert any(name.startswith("v_mfma_f32_") and "f16" in name for name in r.matrix_instructions)


def test_gfx950_gets_its_own_mfma_shapes(dot_reports):
    assert set(dot_reports["gfx950"].matrix_instructions) != set(
        dot_reports["gfx942"].matrix_instructions
    )


def test_dot_uses_wgmma_on_hopper(dot_reports):
    r = dot_reports["sm_90"]
    assert r.ok, r.error
    assert "ptx" in r.asm_kinds and "cubin" in r.asm_kinds
    assert any(name.startswith("wgmma.mma_async") for name in r.matrix_instructions)


@pytest.mark.parametrize("target", TARGETS)
def test_register_reports(dot_reports, softmax_reports, target):
    dot, soft = dot_reports[target], softmax_reports[target]
    assert soft.ok, soft.error
    assert soft.matrix_instructions == {}  # a row softmax has no matrix multiply
    for r in (dot, soft):
        assert r.n_regs is not None and r.n_regs > 0
        assert r.n_spills == 0
    assert dot.n_regs > soft.n_regs  # a 64x64 fp32 accumulator needs more registers


def test_a_kernel_that_does_not_compile_is_reported_not_raised():
    sig = {
        "x_ptr": "*fp32",
        "y_ptr": "*fp32",
        "n_cols": "i32",
        "stride": "i32",
        "BLOCK": "constexpr",
    }
    file = EXAMPLES / "softmax_triton" / "kernel.py"
    (report,) = cross_compile_in_child(file, "_softmax_row", sig, {"BLOCK": 1000}, ["gfx942"])
    assert not report.ok and "power of 2" in report.error.lower().replace(
        "power-of-two", "power of 2"
    )


def test_amd_register_parser_sums_spills():
    text = ".vgpr_count:     40\n.sgpr_spill_count: 2\n.vgpr_spill_count: 3\n"
    assert amd_registers(text) == (40, 5)
