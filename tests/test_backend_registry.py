"""Which backends this box can run, and why not: every unavailability path is a status."""

from types import SimpleNamespace

import pytest
import torch

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks import backends
from kernel_bakeoff.tasks.backends import aiter_gemm, cuda_cpp, hip_cpp, torch_compile, tunableop
from kernel_bakeoff.tasks.backends.hip_cpp import HipCpp, probe_hip


def test_registry_on_this_cpu_box(frozen_rmsnorm):
    from kernel_bakeoff.scripts.freeze import load_task

    spec, _, _ = load_task(frozen_rmsnorm)
    status = {s.name: s for s in backends.statuses(spec)}
    assert set(status) == set(backends.names())
    assert status["torch-compile"].available and status["triton"].available is False
    assert "not Triton" in status["triton"].reason  # rmsnorm is torch: Triton is an author lane
    for name in ("tunableop", "cuda", "hip", "aiter"):
        assert not status[name].available and status[name].reason


def test_languages_are_the_lane_languages_this_box_runs():
    assert backends.languages() == ["torch", "triton"]
    assert backends.languages(available_only=False) == ["torch", "triton", "cuda", "hip"]


def test_select_by_name_or_language_and_refuse_unknown():
    assert [b.name for b in backends.select(["torch"])] == [
        "torch-eager",
        "torch-compile",
        "tunableop",
    ]
    assert [b.name for b in backends.select(["triton", "aiter"])] == [
        "triton",
        "triton-templates",
        "aiter",
    ]
    with pytest.raises(BadInput, match="unknown backend"):
        backends.select(["fortran"])


def test_gpu_backends_say_no_gpu_on_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert "no GPU" in tunableop.BACKEND.unavailable_reason()
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    assert "no CUDA device" in cuda_cpp.BACKEND.unavailable_reason()
    monkeypatch.setattr(torch.version, "hip", "6.4")
    assert "ROCm build" in cuda_cpp.BACKEND.unavailable_reason()
    assert "no ROCm device" in aiter_gemm.BACKEND.unavailable_reason()


def test_cuda_needs_nvcc(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "nvcc not found" in cuda_cpp.BACKEND.unavailable_reason()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").write_text("#!/bin/sh\n")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert cuda_cpp.BACKEND.unavailable_reason() is None


def test_aiter_without_aiter_installed(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.4")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(aiter_gemm, "aiter_root", lambda: None)
    assert "not installed" in aiter_gemm.BACKEND.unavailable_reason()


def test_torch_compile_on_cpu_needs_a_cxx_compiler(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch_compile.shutil, "which", lambda name: None)
    assert "C++ compiler" in torch_compile.BACKEND.unavailable_reason()


class FakeHip:
    """hip-python's shape: calls return (hipError_t, value...); without ROCm they raise."""

    def __init__(self, result=None, raises=None):
        self.result, self.raises = result, raises

    def hipGetDeviceCount(self):
        if self.raises:
            raise self.raises
        return self.result


def test_hip_probe_paths(monkeypatch):
    missing = RuntimeError("failed to dlopen 'b'libamdhip64.so'': cannot open shared object file")
    assert "cannot reach the HIP runtime" in probe_hip(FakeHip(raises=missing))
    ok = SimpleNamespace(value=0)
    assert probe_hip(FakeHip(result=(ok, 0))) == "hip-python sees no HIP device"
    assert probe_hip(FakeHip(result=(ok, 8))) is None
    assert "failed" in probe_hip(FakeHip(result=(SimpleNamespace(value=100), 0)))
    monkeypatch.setattr(torch.version, "hip", None)
    assert "not a ROCm build" in HipCpp(FakeHip(result=(ok, 8))).unavailable_reason()
    monkeypatch.setattr(torch.version, "hip", "6.4")
    assert HipCpp(FakeHip(result=(ok, 8))).unavailable_reason() is None


def test_hip_probe_without_hip_python(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_hip(name, *args, **kwargs):
        if name == "hip":
            raise ModuleNotFoundError("No module named 'hip'", name="hip")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_hip)
    assert "hip-python is not installed" in probe_hip()
    assert hip_cpp.BACKEND.status().available is False


def test_triton_and_compile_without_triton(monkeypatch):
    from kernel_bakeoff.tasks.backends import triton_tune

    real = triton_tune.importlib.util.find_spec
    monkeypatch.setattr(
        triton_tune.importlib.util, "find_spec", lambda n: None if n == "triton" else real(n)
    )
    assert triton_tune.BACKEND.unavailable_reason() == "triton is not installed"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert "needs triton" in torch_compile.BACKEND.unavailable_reason()
    assert "triton" not in backends.languages()
