"""What the harness itself costs, and how well two checks of one candidate agree.

    python -m benchmarks.harness_overhead [--samples 30] [--large-elements N]

Freezes a trivial op (y = 2x) with a tiny workload and one large enough to run >= 100 us on a
GPU, then checks its own kernel `--checks` times, each in a separate check (separate judge and
candidate processes; forked from the warm server that the freeze started, unless
BAKEOFF_WARM_START=0). Reports, per check, the harness's own seconds per candidate-workload:
the check's wall time minus the time spent inside the candidate (loading it and all its calls),
divided by the number of workloads; and, per workload, every check's median and the largest
relative difference between two of them.
Needs only torch (+ triton) and pydantic; runs on a GPU when torch sees one, else on the CPU.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import torch

from kernel_bakeoff.scripts import forkserver
from kernel_bakeoff.scripts.arch import detect, flush_bytes
from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze, measure_baseline
from kernel_bakeoff.scripts.timing import Clock, Flusher

KERNEL = """import torch


def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2.0
"""

OP = """name = "scale2"
kind = "elementwise"
language = "torch"
entry = "kernel.py:scale"
flops = "N"

[[inputs]]
name = "x"
shape = ["N"]
dtype = "float32"

[[workloads]]
name = "tiny"
dims = {{ N = 4096 }}

[[workloads]]
name = "large"
dims = {{ N = {large} }}
"""


def device_name() -> str:
    if torch.cuda.is_available():
        return torch.cuda.get_device_name()
    return f"CPU: {platform.processor() or platform.machine()} ({torch.get_num_threads()} threads)"


def startup_seconds() -> float:
    """A fresh Python importing torch, as the judge and the candidate's process each do."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.monotonic() - started


def flush_ms(device: str) -> tuple[float, int]:
    """One cache flush (the write before every timed sample) and its size, with one thread on
    the CPU as in the candidate's process."""
    if device == "cpu":
        torch.set_num_threads(1)
    nbytes = flush_bytes(detect())
    flush = Flusher(device, nbytes)
    clock = Clock(device)
    flush()
    clock.sync()
    started = time.perf_counter()
    for _ in range(10):
        flush()
    clock.sync()
    return (time.perf_counter() - started) / 10 * 1e3, nbytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30, help="timed samples per workload")
    parser.add_argument("--checks", type=int, default=3, help="separate checks of the candidate")
    parser.add_argument(
        "--large-elements",
        type=int,
        help="elements of the large workload (default: 64M on a GPU, ~100 us at 4 TB/s; 1M on CPU)",
    )
    args = parser.parse_args(argv)
    gpu = torch.cuda.is_available()
    name = device_name()
    large = args.large_elements or ((64 << 20) if gpu else (1 << 20))
    with tempfile.TemporaryDirectory(prefix="bakeoff-overhead-") as tmp:
        op = Path(tmp) / "op"
        op.mkdir()
        (op / "op.toml").write_text(OP.format(large=large))
        (op / "kernel.py").write_text(KERNEL)
        started = time.monotonic()
        task = freeze(
            op, Path(tmp) / "task", measure=partial(measure_baseline, samples=args.samples)
        )
        freeze_s = time.monotonic() - started
        verdicts = []
        for _ in range(args.checks):
            started = time.monotonic()
            verdict = check(task, op / "kernel.py", samples=args.samples)
            verdicts.append((verdict, time.monotonic() - started))
    for verdict, _ in verdicts:
        if not verdict.passed:
            print(f"the trivial candidate did not pass: {verdict.status.value} {verdict.reason}")
            return 1

    count = len(verdicts[0][0].workloads)
    flush, flush_size = flush_ms("cuda" if gpu else "cpu")
    print(f"device: {name}; torch {torch.__version__}; python {platform.python_version()}")
    print(f"samples per workload: {args.samples}; large workload: {large} float32 elements")
    print(f"freeze (baseline through the same path): {freeze_s:.2f} s")
    print(f"fresh python importing torch (what a cold start pays): {startup_seconds():.2f} s")
    warm = "off (BAKEOFF_WARM_START=0)" if not forkserver.enabled() else "on"
    print(f"warm start (judge and candidate forked from a server that imported torch): {warm}")
    print(
        f"cache flush before each sample: {flush:.2f} ms ({flush_size >> 20} MiB), "
        f"{flush * args.samples * count / 1e3:.2f} s per check"
    )
    print()
    print(
        "| check | wall s | in candidate s | harness s | harness s per candidate-workload "
        "| the judge's phases s |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for i, (verdict, wall) in enumerate(verdicts, 1):
        harness = verdict.harness_seconds
        phases = ", ".join(f"{k} {v:.2f}" for k, v in verdict.harness_phases.items())
        print(
            f"| {i} | {wall:.2f} | {verdict.candidate_seconds:.2f} | {harness:.2f} "
            f"| {harness / count:.2f} | {phases} |"
        )
    print()
    print("| workload | median ms per check | largest difference | spread (IQR) ms per check |")
    print("| --- | --- | --- | --- |")
    for i, first in enumerate(verdicts[0][0].workloads):
        if first.checked_only:
            continue  # a size checked for correctness only: no timing
        timings = [v.workloads[i].timing for v, _ in verdicts]
        medians = [t.median_ms for t in timings]
        apart = (max(medians) - min(medians)) / min(medians)
        print(
            f"| {first.workload} | {' / '.join(f'{m:.4f}' for m in medians)} | {100 * apart:.2f}% "
            f"| {' / '.join(f'{t.spread_ms:.4f}' for t in timings)} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
