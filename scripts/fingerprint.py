"""What machine a measurement was taken on: device, architecture, driver, library versions."""

from __future__ import annotations

import platform

import torch

from scripts import arch as arch_mod


def device_kind() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def fingerprint() -> dict:
    fp = {
        "device": "cpu",
        "device_name": platform.processor() or platform.machine(),
        "arch": "cpu",
        "driver": None,
        "torch": torch.__version__,
        "triton": _triton_version(),
        "python": platform.python_version(),
        "hip": torch.version.hip,
        "cuda": torch.version.cuda,
    }
    if torch.cuda.is_available():
        info = arch_mod.detect()
        fp.update(
            device="cuda",
            device_name=info.name,
            vendor=info.vendor,
            arch=info.arch,
            driver=_driver_version(),
            compute_units=info.compute_units,
            wavefront=info.wavefront,
            llc_bytes=info.llc_bytes,
        )
    return fp


def _triton_version() -> str | None:
    try:
        import triton

        return triton.__version__
    except Exception:
        return None


def _driver_version() -> str | None:
    try:
        if torch.version.hip:
            return f"hip {torch.version.hip}"
        return str(torch._C._cuda_getDriverVersion())
    except Exception:
        return None
