"""C++ backends without a GPU: #define and launch-parameter spaces, rewriting, an nvcc
cross-compile of a rewritten kernel, and hip-python argument packing against fakes."""

import ctypes
import shutil
import subprocess
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernel_bakeoff.scripts import arch
from kernel_bakeoff.scripts.spec import OpSpec, Workload
from kernel_bakeoff.tasks.backends import cpp_defines
from kernel_bakeoff.tasks.backends.base import BuildContext
from kernel_bakeoff.tasks.backends.hip_launch import (
    HipError,
    HipKernel,
    kernel_signature,
    pack_args,
)
from kernel_bakeoff.tasks.backends.source import cpp_dialect

KERNEL_CU = textwrap.dedent(
    """
    #ifndef THREADS
    #define THREADS 256
    #endif
    #define UNROLL 4  // elements per thread
    #define EPS_SCALE 3

    __global__ void scale(float* __restrict__ y, const float* x, float a, int n) {
        int i = (blockIdx.x * THREADS + threadIdx.x) * UNROLL;
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u) if (i + u < n) y[i + u] = a * x[i + u];
    }
    """
)
ENTRY = textwrap.dedent(
    """
    def scale(x, a: float = 2.0, threads_per_block: int = 128, name: str = "k"):
        raise NotImplementedError  # built with load_inline on a CUDA box
    """
)


def cuda_ctx(tmp_path) -> BuildContext:
    src = tmp_path / "src"
    src.mkdir()
    (src / "scale.cu").write_text(KERNEL_CU)
    (src / "kernel.py").write_text(ENTRY)
    spec = OpSpec(
        name="scale", language="cuda", entry="kernel.py:scale", workloads=[Workload(name="w")]
    )
    return BuildContext(tmp_path, spec, src, tmp_path / "work", arch.named("sm_90"), "0" * 64)


def test_tunable_defines_and_entry_kwargs(tmp_path):
    ctx = cuda_ctx(tmp_path)
    assert cpp_dialect(ctx.baseline_src) == "cuda"
    assert cpp_defines.find_defines(ctx.baseline_src) == {"THREADS": 256, "UNROLL": 4}
    assert cpp_defines.entry_int_kwargs(ctx.baseline_src / "kernel.py", "scale") == {
        "threads_per_block": 128
    }
    assert cpp_defines.values_around(256) == (64, 128, 256, 512, 1024)
    assert cpp_defines.values_around(6) == (3, 6, 12)
    assert max(cpp_defines.values_around(1024)) == 1024  # THREADS-like values stay launchable


def test_rewrite_keeps_everything_but_the_values():
    out = cpp_defines.rewrite(KERNEL_CU, {"THREADS": 512, "UNROLL": 8})
    assert "#define THREADS 512" in out and "#define UNROLL 8  // elements per thread" in out
    assert out.replace("512", "256").replace("UNROLL 8", "UNROLL 4") == KERNEL_CU


def test_built_candidate_carries_rewritten_sources(tmp_path):
    ctx = cuda_ctx(tmp_path)
    tunable = cpp_defines.tunable(ctx, "cuda", "cuda")
    assert tunable.defaults == [{"#THREADS": 256, "#UNROLL": 4, "threads_per_block": 128}]
    ref = tunable.build({"#THREADS": 1024, "#UNROLL": 2, "threads_per_block": 64})
    cu = (Path(ref.path) / "frozen" / "scale.cu").read_text()
    assert "#define THREADS 1024" in cu and "#define UNROLL 2" in cu
    assert "_KWARGS = {'threads_per_block': 64}" in (Path(ref.path) / "kernel.py").read_text()
    assert "#define THREADS 256" in (ctx.baseline_src / "scale.cu").read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this box")
def test_rewritten_kernel_cross_compiles_for_sm_90(tmp_path):
    ctx = cuda_ctx(tmp_path)
    ref = cpp_defines.tunable(ctx, "cuda", "cuda").build(
        {"#THREADS": 512, "#UNROLL": 8, "threads_per_block": 128}
    )
    cu = Path(ref.path) / "frozen" / "scale.cu"
    ptx = tmp_path / "scale.ptx"
    done = subprocess.run(
        ["nvcc", "-arch=sm_90", "--ptx", str(cu), "-o", str(ptx)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    text = ptx.read_text()
    assert ".target sm_90" in text and "scale" in text
    assert text.count("mul.f32") >= 8  # UNROLL 8, fully unrolled


HIP_SRC = 'extern "C" __global__ void axpy(float* y, const float* __restrict__ x, const float a, long long n, unsigned int flags) {}'


def test_kernel_signature_and_argument_packing():
    types = kernel_signature(HIP_SRC, "axpy")
    assert types == ["pointer", "pointer", "float", "long long", "unsigned int"]
    tensor = SimpleNamespace(data_ptr=lambda: 0x7F00_0000_1000)
    packed = pack_args(types, (tensor, 0x7F00_0000_2000, 2.5, 1 << 40, 3))
    assert [type(p) for p in packed] == [
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_float,
        ctypes.c_longlong,
        ctypes.c_uint,
    ]
    assert packed[0].value == 0x7F00_0000_1000 and packed[3].value == 1 << 40
    with pytest.raises(HipError, match="takes 5 arguments"):
        pack_args(types, (tensor,))
    with pytest.raises(HipError, match="is a float; got a tensor"):
        pack_args(types, (tensor, tensor, tensor, 1, 1))


OK = SimpleNamespace(value=0)


class FakeHiprtc:
    def __init__(self, fail_compile=False):
        self.calls, self.fail = [], fail_compile

    def hiprtcCreateProgram(self, src, name, n, headers, names):
        self.calls.append(("create", name))
        return (OK, "prog")

    def hiprtcCompileProgram(self, prog, n, opts):
        self.calls.append(("compile", list(opts)))
        return (SimpleNamespace(value=6) if self.fail else OK,)

    def hiprtcGetProgramLogSize(self, prog):
        return (OK, 11)

    def hiprtcGetProgramLog(self, prog, buf):
        buf[:] = b"bad syntax\0"
        return (OK,)

    def hiprtcGetCodeSize(self, prog):
        return (OK, 4)

    def hiprtcGetCode(self, prog, buf):
        buf[:] = b"\x7fELF"
        return (OK,)


class FakeHip:
    def __init__(self):
        self.calls = []

    def hipModuleLoadData(self, code):
        self.calls.append(("load", code))
        return (OK, "module")

    def hipModuleGetFunction(self, module, name):
        self.calls.append(("function", name))
        return (OK, "fn")

    def hipModuleLaunchKernel(self, f, *dims, sharedMemBytes, stream, kernelParams, extra):
        self.calls.append(("launch", f, dims, sharedMemBytes, kernelParams, extra))
        return (OK,)


def test_hip_kernel_compiles_loads_and_launches_through_the_bindings():
    hip, rtc = FakeHip(), FakeHiprtc()
    k = HipKernel(HIP_SRC, "axpy", defines={"BLOCK": 256}, arch="gfx942", hip=hip, hiprtc=rtc)
    y = SimpleNamespace(data_ptr=lambda: 4096)
    k((40,), (256,), y, y, 2.0, 10_240, 0, shared_mem=128)
    k((40,), (256,), y, y, 2.0, 10_240, 0)
    assert rtc.calls[1] == ("compile", [b"--offload-arch=gfx942", b"-O3", b"-DBLOCK=256"])
    assert [c[0] for c in hip.calls] == ["load", "function", "launch", "launch"]  # compiled once
    _, fn, dims, shared, params, extra = hip.calls[2]
    assert (fn, dims, shared, params) == ("fn", (40, 1, 1, 256, 1, 1), 128, None)
    assert [type(e) for e in extra][2:4] == [ctypes.c_float, ctypes.c_longlong]


def test_hip_compile_errors_carry_the_log():
    k = HipKernel(HIP_SRC, "axpy", arch="gfx950", hip=FakeHip(), hiprtc=FakeHiprtc(True))
    with pytest.raises(HipError, match="bad syntax"):
        k.compile()


def test_shipped_cuda_example_has_a_search_space_and_says_why_it_cannot_run_here(tmp_path):
    """examples/rmsnorm_cuda: the cuda lane's space is its THREADS define; on a machine without
    an NVIDIA GPU, freezing it fails with one line saying so (exit 2), writing nothing."""
    import os
    import sys

    import torch

    shipped = Path(__file__).resolve().parents[1] / "examples" / "rmsnorm_cuda"
    assert cpp_dialect(shipped) == "cuda"
    assert cpp_defines.find_defines(shipped) == {"THREADS": 256}
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the refusal is for machines without one")
    # its sizes made small: the freeze runs the reference at every size (and at others, and on
    # several draws) before the kernel's first call refuses the CPU, 15 CPU-s at the GPU sizes
    example = tmp_path / "rmsnorm_cuda"
    shutil.copytree(shipped, example)
    spec = (example / "op.toml").read_text()
    small = spec.replace("T = 4096, H = 4096", "T = 64, H = 256")
    small = small.replace("T = 16384, H = 1024", "T = 128, H = 128")
    assert "T = 64, H = 256" in small and "T = 128, H = 128" in small  # both workloads small
    (example / "op.toml").write_text(small)
    out = tmp_path / "task"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernel_bakeoff.flows.cli",
            "freeze",
            str(example),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=shipped.parents[1],
        env={**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"},
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "runs on an NVIDIA GPU; its input is on cpu" in line
    assert not out.exists()
