"""What machine a measurement was taken on: device, architecture, driver, library versions."""

from __future__ import annotations

import platform
from pathlib import Path

from kernel_bakeoff.scripts import arch as arch_mod

# torch is imported where it is used, not when `bakeoff run` imports this module. (Its first
# line still waits for torch: the device pool asks torch for the GPUs before it.)


def device_kind() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def fingerprint() -> dict:
    import torch

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


def _driver_version(root: Path = Path("/")) -> str | None:
    """The kernel driver's release (NVIDIA: 580.159.04), as its module reports it; on ROCm
    the HIP runtime's version when the amdgpu module reports none."""
    for name in ("nvidia", "amdgpu"):
        try:
            text = (root / "sys" / "module" / name / "version").read_text().strip()
        except OSError:
            continue
        if text:
            return text if name == "nvidia" else f"amdgpu {text}"
    try:  # "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  <date>"
        line = (root / "proc" / "driver" / "nvidia" / "version").read_text().splitlines()[0]
        return line.split("Kernel Module", 1)[1].split()[0]
    except (OSError, IndexError):
        pass
    import torch

    return f"hip {torch.version.hip}" if torch.version.hip else None
