"""A profile digest: the top kernels of one candidate on one workload, in a short table.

Per kernel: its share of the kernel time, time per call, achieved bandwidth against the device's
peak, compute throughput and occupancy where the profiler reports them, and the unit that
limits it. For the whole call: the op's bytes and flops (the report's roofline,
`tasks/check/roofline.py`) over the profiled time, against the peaks. Given to the optimizer when it
asks (the `profile` tool) and to the reviewer always (`tasks/agents/review.py`).

The figures come from a profiler watching untrusted code (`profile_parse` says how a candidate
could print rows of its own): advice and context, never a verdict of the record.
"""

from __future__ import annotations

from pydantic import BaseModel

from kernel_bakeoff.tasks.agents.profile_parse import KernelStat
from kernel_bakeoff.tasks.check.roofline import DeviceRates, WorkloadFloor

TOP = 8
BUSY_PCT = 60.0  # ncu's own rule: under 60% of peak on both units, the kernel waits (latency)


class Digest(BaseModel):
    tool: str
    candidate: str
    workload: str
    arch: str
    peak_bandwidth: float  # bytes/s
    peak_flops: float
    calls: int  # calls of the op under the profiler
    total_us: float  # over all those calls
    rows: list[KernelStat]
    left_out: int = 0  # kernels below the top rows
    bytes_per_call: float | None = None
    flops_per_call: float | None = None


def build(
    tool: str,
    stats: list[KernelStat],
    *,
    calls: int,
    rates: DeviceRates,
    floor: WorkloadFloor | None,
    candidate: str,
    workload: str,
    total_us: float | None = None,
) -> Digest:
    return Digest(
        tool=tool,
        candidate=candidate,
        workload=workload,
        arch=rates.arch,
        peak_bandwidth=rates.bandwidth,
        peak_flops=rates.peak_flops,
        calls=max(1, calls),
        total_us=total_us if total_us is not None else sum(s.time_us for s in stats),
        rows=stats[:TOP],
        left_out=max(0, len(stats) - TOP),
        bytes_per_call=floor.bytes if floor else None,
        flops_per_call=floor.flops if floor else None,
    )


def bandwidth_of(stat: KernelStat, peak: float) -> tuple[float | None, float | None]:
    """(bytes/s, % of peak): measured bytes/s where the profiler gave them, else its DRAM
    throughput as a share of peak."""
    if stat.bandwidth is not None:
        return stat.bandwidth, 100 * stat.bandwidth / peak
    if stat.dram_pct is not None:
        return stat.dram_pct / 100 * peak, stat.dram_pct
    return None, None


def limiter(stat: KernelStat, peak_bandwidth: float) -> str:
    mem = bandwidth_of(stat, peak_bandwidth)[1]
    comp = stat.compute_pct
    if mem is None and comp is None:
        return "-"
    if max(mem or 0.0, comp or 0.0) < BUSY_PCT:
        return f"latency (no unit at {BUSY_PCT:.0f}% of peak)"
    return "memory" if (mem or 0.0) >= (comp or 0.0) else "compute"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def render(d: Digest) -> str:
    per_call_us = d.total_us / d.calls
    lines = [
        f"profile digest: {d.candidate} on {d.workload} ({d.tool}, {d.arch}); {d.calls} calls, "
        f"{per_call_us:.4g} us per call in what was profiled"
    ]
    seconds = per_call_us * 1e-6
    if seconds > 0 and (d.bytes_per_call or d.flops_per_call):
        parts = []
        if d.bytes_per_call:
            bw = d.bytes_per_call / seconds
            parts.append(
                f"{d.bytes_per_call:.4g} bytes -> {bw / 1e9:.4g} GB/s "
                f"({100 * bw / d.peak_bandwidth:.1f}% of peak {d.peak_bandwidth / 1e9:.4g} GB/s)"
            )
        if d.flops_per_call:
            fl = d.flops_per_call / seconds
            parts.append(
                f"{d.flops_per_call:.4g} flops -> {fl / 1e9:.4g} GFLOP/s "
                f"({100 * fl / d.peak_flops:.2f}% of peak {d.peak_flops / 1e12:.4g} TFLOP/s)"
            )
        lines.append(
            "whole call (the op's bytes and flops, the report's roofline): " + "; ".join(parts)
        )
    lines += [
        "",
        "| kernel | calls | share | us per call | GB/s (of peak) | compute | occupancy | limiter |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in d.rows:
        bw, bw_pct = bandwidth_of(s, d.peak_bandwidth)
        share = 100 * s.time_us / d.total_us if d.total_us else 0.0
        gbs = "-" if bw is None else f"{bw / 1e9:.4g} ({bw_pct:.0f}%)"
        lines.append(
            f"| {s.name} | {s.calls} | {share:.1f}% | {s.time_us / d.calls:.4g} | {gbs} | "
            f"{_pct(s.compute_pct)} | {_pct(s.occupancy_pct)} | {limiter(s, d.peak_bandwidth)} |"
        )
    if d.left_out:
        lines.append(f"({d.left_out} smaller kernel(s) left out)")
    return "\n".join(lines)
