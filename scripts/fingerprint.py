"""What machine a measurement was taken on: device, architecture, driver, library versions."""

from __future__ import annotations

import platform

import torch


def arch_name(props=None) -> str:
    """gfx942 / gfx950 / sm_90 / cpu. ROCm names carry feature suffixes (gfx942:sramecc+:xnack-).

    Capability (9, 0) alone is ambiguous (gfx90a reports it under ROCm), so HIP is asked first.
    """
    if not torch.cuda.is_available():
        return "cpu"
    props = props or torch.cuda.get_device_properties(torch.cuda.current_device())
    if torch.version.hip:
        return str(getattr(props, "gcnArchName", "gfx")).split(":")[0]
    return f"sm_{props.major}{props.minor}"


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
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        fp.update(
            device="cuda",
            device_name=props.name,
            arch=arch_name(props),
            driver=_driver_version(),
            multiprocessors=props.multi_processor_count,
            l2_cache_bytes=getattr(props, "L2_cache_size", None),
            memory_bytes=props.total_memory,
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
