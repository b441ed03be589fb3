"""The expert-kernel library backends: detection on this box, what each says when it cannot run,
and their shims exercised under a CPU interpreter where the library imports and supports it
(Liger under TRITON_INTERPRET=1, Helion under HELION_INTERPRET=1), skipped with the reason where
not. CI installs Liger and Helion without their dependencies (.ci/run); the others pull CUDA
torch or need a GPU to import, and skip, saying so."""

import importlib.util
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from kernel_bakeoff.tasks import backends
from kernel_bakeoff.tasks.backends import (
    lib_aiter_ops,
    lib_flag_gems,
    lib_flashinfer,
    lib_helion,
    lib_liger,
    lib_quack,
    library,
)
from kernel_bakeoff.tasks.backends.base import BuildContext
from kernel_bakeoff.tasks.backends.match import Match

LIBRARIES = [lib_liger, lib_flag_gems, lib_quack, lib_flashinfer, lib_helion, lib_aiter_ops]


def test_every_library_is_registered_and_never_raises_on_status():
    names = backends.names()
    for lib in LIBRARIES:
        assert lib.BACKEND.name in names
        status = lib.BACKEND.status()
        assert status.available or status.reason  # unavailable always says why


def test_not_installed_names_the_extra(monkeypatch):
    monkeypatch.setattr(library.importlib.util, "find_spec", lambda name: None)
    assert "pip install 'kernel-bakeoff[nvidia]'" in lib_quack.BACKEND.unavailable_reason()
    assert "pip install 'kernel-bakeoff[amd]'" in lib_aiter_ops.BACKEND.unavailable_reason()


def test_device_rules(monkeypatch):
    monkeypatch.setattr(library.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(library, "gpu_vendor", lambda: None)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert "runs on a GPU" in lib_flashinfer.BACKEND.unavailable_reason()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert "runs on a GPU" in lib_liger.BACKEND.unavailable_reason()  # not asked for on the CPU
    monkeypatch.setenv("BAKEOFF_INTERPRETED_TEMPLATES", "1")
    assert lib_liger.BACKEND.unavailable_reason() is None  # Triton kernels: the interpreter
    assert "runs on a GPU" in lib_quack.BACKEND.unavailable_reason()  # CuTe DSL: no CPU path
    monkeypatch.setattr(library, "gpu_vendor", lambda: "amd")
    assert "runs on nvidia GPUs, not amd" in lib_quack.BACKEND.unavailable_reason()
    assert lib_aiter_ops.BACKEND.unavailable_reason() is None
    monkeypatch.setattr(library, "gpu_vendor", lambda: "nvidia")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (8, 0))
    assert "Hopper or newer" in lib_quack.BACKEND.unavailable_reason()
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    assert lib_quack.BACKEND.unavailable_reason() is None


def test_a_library_takes_only_the_ops_it_covers():
    def m(op):
        return Match(op, "route", "float32", {"w": [4, 8]}, ["in0"])

    found = [m("softmax"), m("linear"), m("rms_norm"), m("sum")]
    assert [x.op for x in lib_quack.BACKEND.covered(found)] == ["softmax", "rms_norm"]
    assert [x.op for x in lib_aiter_ops.BACKEND.covered(found)] == ["rms_norm"]
    gates = [m("swiglu"), Match("geglu", "route", "float32", {}, [], {"approximate": "none"})]
    gates.append(Match("geglu", "route", "float32", {}, [], {"approximate": "tanh"}))
    # Liger's GeGLU is the tanh GELU only: an exact-GELU GeGLU is not its match
    assert [x.label for x in lib_liger.BACKEND.covered(gates)] == ["swiglu", "geglu"]
    assert lib_liger.BACKEND.covered(gates)[1].params["approximate"] == "tanh"


def _shim(module, tmp_path: Path, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(module.IMPL)
    spec = importlib.util.spec_from_file_location(f"_shim_{name}_{tmp_path.name}", path)
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    return shim


def _run_or_skip(fn, library_name):
    """A call the library's kernel makes under the CPU interpreter; skipped, saying what the
    interpreter refused, when that is where it stops."""
    from triton.runtime.errors import InterpreterError

    try:
        return fn()
    except InterpreterError as exc:
        pytest.skip(f"{library_name}'s kernel does not run under Triton's interpreter: {exc}")


@pytest.mark.skipif(
    importlib.util.find_spec("liger_kernel") is None,
    reason="liger-kernel is not installed (the [nvidia]/[amd] extras; CI installs neither)",
)
@pytest.mark.parametrize(
    "op", ["softmax", "cross_entropy", "rms_norm", "layer_norm", "swiglu", "geglu"]
)
def test_liger_under_the_interpreter(tmp_path, monkeypatch, op):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    shim = _shim(lib_liger, tmp_path, op)
    x, w, b = torch.randn(6, 37), torch.rand(37), torch.randn(37)
    t = torch.randint(0, 37, (6,))
    calls = {
        "softmax": (lambda: shim.softmax(x, -1), lambda: F.softmax(x, -1)),
        "cross_entropy": (lambda: shim.cross_entropy(x, t, "mean"), lambda: F.cross_entropy(x, t)),
        "rms_norm": (
            lambda: shim.rms_norm(x, (37,), w, 1e-6),
            lambda: F.rms_norm(x, (37,), w, 1e-6),
        ),
        "layer_norm": (
            lambda: shim.layer_norm(x, (37,), w, b, 1e-5),
            lambda: F.layer_norm(x, (37,), w, b, 1e-5),
        ),
        "swiglu": (
            lambda: shim.swiglu(x[:, :18], x[:, 18:36]),
            lambda: F.silu(x[:, :18]) * x[:, 18:36],
        ),
        "geglu": (
            lambda: shim.geglu(x[:, :18], x[:, 18:36], "tanh"),
            lambda: F.gelu(x[:, :18], approximate="tanh") * x[:, 18:36],
        ),
    }
    got, want = calls[op]
    torch.testing.assert_close(_run_or_skip(got, "Liger"), want())


@pytest.mark.skipif(
    importlib.util.find_spec("helion") is None,
    reason="helion is not installed (the [nvidia]/[amd] extras; CI installs neither)",
)
def test_helion_kernels_under_its_interpreter(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # Helion refuses both at once
    monkeypatch.setenv("HELION_INTERPRET", "1")
    shim = _shim(lib_helion, tmp_path, "helion")
    x, w = torch.randn(3, 5, 37), torch.rand(37)
    torch.testing.assert_close(shim.softmax(x, -1), F.softmax(x, -1))
    torch.testing.assert_close(shim.rms_norm(x, (37,), w, 1e-6), F.rms_norm(x, (37,), w, 1e-6))
    assert shim.softmax(x, 0) is None  # not the last dim: left to torch


@pytest.mark.skipif(
    importlib.util.find_spec("liger_kernel") is None,
    reason="liger-kernel is not installed (the [nvidia]/[amd] extras; CI installs neither)",
)
def test_liger_candidate_from_a_traced_match(frozen_rmsnorm, tmp_path, monkeypatch):
    """Liger's candidate for the hand-written RMSNorm: the shim called on the reference's inputs,
    falling back to the reference where the shim declines."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    ctx = BuildContext.load(frozen_rmsnorm, tmp_path)
    (ref,) = lib_liger.BACKEND.candidates(ctx)
    assert ref.origin.startswith("liger-kernel 0.") and ref.params["match"] == "rms_norm"
    assert (Path(ref.path) / "impl.py").read_text() == lib_liger.IMPL


def test_flag_gems_candidate_is_a_whole_module_substitution(frozen_rmsnorm, tmp_path):
    ctx = BuildContext.load(frozen_rmsnorm, tmp_path)
    (ref,) = lib_flag_gems.BACKEND.candidates(ctx)
    path = Path(ref.path)
    assert (path / "gems_mode.py").read_text() == lib_flag_gems.MODE
    assert "with _mode():" in (path / "kernel.py").read_text()
    if importlib.util.find_spec("flag_gems") is None or not torch.cuda.is_available():
        pytest.skip("flag_gems looks for a GPU when it is imported: not run on the CPU")
