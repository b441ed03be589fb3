"""The roofline view's numbers: bytes and flops per workload from the op spec, and the device's
memory bandwidth and compute peak, so a time can be read against the op's floors on this device.

Bytes: the op spec's `extra.bytes` expression when it declares one, else every input read once
(its shape over the workload's dims times its dtype's size). Outputs are not counted then: the
op spec does not declare them, so that floor is a lower bound. Flops: the spec's `flops`. Where
the spec declares neither, the reference's trace on the meta device gives both (its flops from
FlopCounterMode, its bytes from every tensor it reads and writes): a KernelBench problem's.

Rates: on a GPU, the datasheet figures the harness's physical-floor check uses (scripts/arch.py);
on the CPU, where that table holds only deliberately generous placeholders, the rates are
measured here, now, by a large copy and an fp32 matmul, and the view says so.
"""

from __future__ import annotations

import time

from pydantic import BaseModel

from kernel_bakeoff.scripts import arch as arch_mod
from kernel_bakeoff.scripts import timing
from kernel_bakeoff.scripts.spec import OpSpec

DTYPE_BYTES = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}
COPY_BYTES = 64 << 20  # CPU copy probe: well over a desktop last-level cache
MATMUL_N = 512


class DeviceRates(BaseModel):
    arch: str
    bandwidth: float  # bytes/s
    peak_flops: float  # flop/s
    source: str  # "datasheet" or "measured"
    note: str


class WorkloadFloor(BaseModel):
    workload: str
    bytes: float
    bytes_rule: str
    flops: float
    memory_floor_ms: float | None
    compute_floor_ms: float | None


def input_bytes(spec: OpSpec, dims: dict[str, int]) -> float:
    total = 0.0
    for i in spec.inputs:
        n = 1
        for d in i.shape:
            n *= d if isinstance(d, int) else int(dims.get(d, 0))
        total += n * DTYPE_BYTES.get(i.dtype, 4)
    return total


def floors(
    spec: OpSpec, rates: DeviceRates, traced: dict[str, dict] | None = None
) -> list[WorkloadFloor]:
    """Per timed workload. `traced` (workload -> {"flops", "bytes"}, from the reference's trace on
    the meta device: tasks/backends/trace.py) fills in what the spec does not declare."""
    out = []
    for w in spec.timed_workloads:
        seen = (traced or {}).get(w.name) or {}
        declared = timing.evaluate(spec.extra.get("bytes"), w.dims)
        if declared:
            nbytes, rule = declared, "declared by the op spec (extra.bytes)"
        elif seen.get("bytes"):
            nbytes = float(seen["bytes"])
            rule = "traced: inputs, parameters and outputs, each moved once"
        else:
            nbytes = input_bytes(spec, w.dims)
            rule = "inputs read once, from the spec's shapes; outputs not counted (a lower bound)"
        flops = timing.evaluate(spec.flops, w.dims) or float(seen.get("flops") or 0)
        out.append(
            WorkloadFloor(
                workload=w.name,
                bytes=nbytes,
                bytes_rule=rule,
                flops=flops,
                memory_floor_ms=1e3 * nbytes / rates.bandwidth if nbytes else None,
                compute_floor_ms=1e3 * flops / rates.peak_flops if flops else None,
            )
        )
    return out


def measure_cpu() -> tuple[float, float]:
    """(bytes/s of a large tensor copy counting read and write, fp32 matmul flop/s), best of 3."""
    import torch

    src = torch.ones(COPY_BYTES // 4, dtype=torch.float32)
    dst = torch.empty_like(src)
    a = torch.randn(MATMUL_N, MATMUL_N)
    b = torch.randn(MATMUL_N, MATMUL_N)
    copy_s = mm_s = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        dst.copy_(src)
        copy_s = min(copy_s, time.perf_counter() - t0)
        t0 = time.perf_counter()
        torch.mm(a, b)
        mm_s = min(mm_s, time.perf_counter() - t0)
    return 2 * COPY_BYTES / copy_s, 2 * MATMUL_N**3 / mm_s


def device_rates(fingerprint: dict) -> DeviceRates:
    arch = str(fingerprint.get("arch") or "cpu")
    if arch == "cpu":
        bw, fl = measure_cpu()
        return DeviceRates(
            arch=arch,
            bandwidth=bw,
            peak_flops=fl,
            source="measured",
            note=(
                f"CPU: measured by the report on this host just now ({COPY_BYTES >> 20} MiB "
                f"tensor copy, read + write: {bw / 1e9:.1f} GB/s; fp32 {MATMUL_N}^3 matmul: "
                f"{fl / 1e9:.1f} GFLOP/s, one process). The harness's CPU table holds only "
                "generous placeholders, so these replace it here."
            ),
        )
    info = arch_mod.named(arch)
    return DeviceRates(
        arch=arch,
        bandwidth=info.peak_bandwidth,
        peak_flops=info.peak_flops,
        source="datasheet",
        note=(
            f"{arch}: datasheet peaks from scripts/arch.py ({info.peak_bandwidth / 1e12:.2f} TB/s, "
            f"{info.peak_flops / 1e12:.0f} TFLOP/s dense fp16/bf16), the same figures the "
            "harness's physical-floor check uses; not measured on this device."
        ),
    )
