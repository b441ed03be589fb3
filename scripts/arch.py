"""Architecture detection and the device facts the harness needs (cache size, peak rates).

ROCm reports names such as ``gfx942:sramecc+:xnack-``; the feature suffix is stripped.
Compute capability (9, 0) alone does not tell gfx90a from sm_90, so HIP is asked first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kernel_bakeoff.scripts.errors import BadInput

# Last-level cache beyond what the driver reports as L2 (AMD's Infinity Cache / MALL).
_INFINITY_CACHE_BYTES = {"gfx942": 256 << 20, "gfx950": 256 << 20, "gfx90a": 0}
# Peak rates used for the physical floor: (bytes/s of device memory, dense fp16/bf16 flop/s).
# Datasheet figures; a candidate measured faster than bytes/peak_bw or flops/peak_flops is flagged.
_PEAKS = {
    "sm_90": (4.8e12, 989e12),  # H100 SXM 3.35 TB/s, H200 4.8 TB/s: the larger one bounds both
    "sm_100": (8.0e12, 2250e12),
    "gfx942": (6.0e12, 1307e12),  # MI300X 5.3 TB/s, MI325X 6.0 TB/s
    "gfx950": (8.0e12, 2500e12),  # MI355X
    "cpu": (1.0e12, 50e12),  # generous: no CPU here reaches these
}
_DEFAULT_PEAK = (10e12, 5000e12)


@dataclass(frozen=True)
class ArchInfo:
    vendor: str  # "nvidia", "amd" or "cpu"
    arch: str  # "sm_90", "gfx942", "cpu", ...
    name: str
    compute_units: int
    wavefront: int
    llc_bytes: int

    @property
    def peak_bandwidth(self) -> float:
        return _PEAKS.get(self.arch, _DEFAULT_PEAK)[0]

    @property
    def peak_flops(self) -> float:
        return _PEAKS.get(self.arch, _DEFAULT_PEAK)[1]


def strip_features(gcn_arch_name: str) -> str:
    return gcn_arch_name.split(":")[0].strip()


def from_properties(props, hip: bool) -> ArchInfo:
    """Build ArchInfo from torch.cuda device properties (or a fake with the same fields)."""
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    if hip:
        arch = strip_features(str(getattr(props, "gcnArchName", "gfx")))
        return ArchInfo(
            vendor="amd",
            arch=arch,
            name=props.name,
            compute_units=props.multi_processor_count,
            wavefront=int(getattr(props, "warp_size", 64) or 64),
            llc_bytes=l2 + _INFINITY_CACHE_BYTES.get(arch, 0),
        )
    return ArchInfo(
        vendor="nvidia",
        arch=f"sm_{props.major}{props.minor}",
        name=props.name,
        compute_units=props.multi_processor_count,
        wavefront=int(getattr(props, "warp_size", 32) or 32),
        llc_bytes=l2,
    )


def detect(device_index: int | None = None) -> ArchInfo:
    import torch  # here, not at the top: importing this module needs no torch

    if not torch.cuda.is_available():
        return ArchInfo("cpu", "cpu", "cpu", 1, 1, llc_bytes=cpu_llc_bytes())
    index = torch.cuda.current_device() if device_index is None else device_index
    return from_properties(torch.cuda.get_device_properties(index), hip=bool(torch.version.hip))


CPU_LLC_VAR = "BAKEOFF_CPU_LLC_MIB"
CPU_LLC_MIB = 64  # what a server CPU's last-level cache is assumed to be; a host may say otherwise


def cpu_llc_bytes() -> int:
    """The CPU's last-level cache as the harness takes it (the flush writes twice this before
    each timed call): BAKEOFF_CPU_LLC_MIB, else CPU_LLC_MIB. A host whose cache is larger sets
    it for cold-cache figures; the test suite, which times nothing it asserts, sets it small.
    BadInput for a value that is not a positive number."""
    raw = os.environ.get(CPU_LLC_VAR, "").strip()
    try:
        mib = float(raw) if raw else CPU_LLC_MIB
    except ValueError:
        mib = 0.0
    if not 0 < mib < 1 << 20:
        raise BadInput(CPU_LLC_VAR, f"must be a positive number of MiB, got {raw!r}")
    return int(mib * (1 << 20))


def flush_bytes(info: ArchInfo) -> int:
    """A cache-flush buffer well over the last-level cache (at least 512 MiB on MI300X)."""
    if info.vendor == "cpu":
        return 2 * info.llc_bytes
    return max(2 * info.llc_bytes, 256 << 20)


def named(arch: str) -> ArchInfo:
    """ArchInfo for an architecture named without its device (planning, cross-compiling): the
    vendor and wavefront follow from the name; counts the device would report are left at 0."""
    arch = strip_features(arch)
    if arch.startswith("gfx"):
        wave = 32 if arch.startswith(("gfx10", "gfx11", "gfx12")) else 64
        return ArchInfo("amd", arch, arch, 0, wave, _INFINITY_CACHE_BYTES.get(arch, 0))
    if arch.startswith("sm_"):
        return ArchInfo("nvidia", arch, arch, 0, 32, 0)
    if arch == "cpu":
        return ArchInfo("cpu", "cpu", "cpu", 1, 1, llc_bytes=CPU_LLC_MIB << 20)
    raise ValueError(f"unknown architecture {arch!r} (gfx..., sm_..., or cpu)")


def compile_target(info: ArchInfo) -> tuple[str, str | int, int]:
    """Triton's GPUTarget fields (backend, arch, warp size) for a GPU architecture."""
    if info.vendor == "amd":
        return ("hip", info.arch, info.wavefront)
    if info.vendor == "nvidia":
        return ("cuda", int(info.arch.removeprefix("sm_")), info.wavefront)
    raise ValueError(f"no GPU compile target for {info.arch}")
