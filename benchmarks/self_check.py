"""Each shipped example checked against its own frozen baseline: the speedup must be 1 within noise.

    python -m benchmarks.self_check [--samples 30] [--checks 2] [EXAMPLE ...]

Freezes every example (its baseline timed through the harness), then checks the example's own
kernel as the candidate `--checks` times, each a separate check (a KernelBench problem is its
own candidate as `ModelNew = Model`). Prints, per example and workload, the frozen baseline's
median, each check's median and speedup, and the relative spread (IQR / median) of both sides.
Needs torch (+ triton) and pydantic; runs on a GPU when torch sees one, else on the CPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import torch

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze, load_task, measure_baseline

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ["rmsnorm_torch", "softmax_triton", "gemm_bias_gelu"]
KERNELBENCH = ["kernelbench/conv2d_relu_bias.py", "kernelbench/matmul_gelu.py"]


def own_candidate(example: Path, scratch: Path) -> Path:
    """The example's own kernel in the form a candidate takes."""
    if example.is_dir():
        return example
    path = scratch / example.name
    shutil.copy(example, path)
    with path.open("a") as f:
        f.write("\n\nModelNew = Model\n")
    return path


def _clock_range(clocks) -> str:
    known = [c for c in clocks or [] if c is not None]
    return f"{min(known)}-{max(known)}" if known else "-"


def _median(values) -> str:
    return f"{statistics.median(values):.4f}" if values else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="*", default=EXAMPLES + KERNELBENCH)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--checks", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write every verdict (raw samples) here as JSON")
    args = parser.parse_args(argv)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else platform.machine()
    print(f"device: {device}; torch {torch.__version__}; samples {args.samples}", flush=True)
    rows, failed = [], 0
    with tempfile.TemporaryDirectory(prefix="bakeoff-self-check-") as tmp:
        for name in args.examples:
            example = ROOT / "examples" / name
            started = time.monotonic()
            task = freeze(
                example,
                Path(tmp) / "tasks" / example.stem,
                measure=partial(measure_baseline, samples=args.samples),
            )
            _, _, baseline = load_task(task)
            candidate = own_candidate(example, Path(tmp))
            verdicts = [check(task, candidate, samples=args.samples) for _ in range(args.checks)]
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                saved = {
                    "baseline": baseline,
                    "checks": [v.model_dump(mode="json") for v in verdicts],
                }
                (args.out / f"{example.stem}.json").write_text(json.dumps(saved))
            print(f"{name}: {time.monotonic() - started:.1f} s", flush=True)
            for v in verdicts:
                if not v.passed:
                    failed += 1
                    print(f"  {v.status.value}: {v.reason}")
            for i, wl in enumerate(verdicts[0].workloads):
                if wl.checked_only:
                    continue  # a size checked for correctness only: no timing
                # the typed entry as the timing record the table below reads
                base = baseline.workloads[wl.workload].model_dump()
                checks = [v.workloads[i] for v in verdicts if v.passed]
                rows.append((name, wl.workload, base, checks))
    print()
    print(
        "| example | workload | baseline ms (spread) | check medians ms | speedups "
        "| SM MHz, baseline; checks | host gap ms (median), baseline; checks |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, workload, base, checks in rows:
        rel = base["spread_ms"] / base["median_ms"]
        medians = " / ".join(f"{c.timing.median_ms:.4f}" for c in checks)
        speedups = " / ".join(f"{c.speedup:.3f}" for c in checks)
        timings = [base, *(c.timing.model_dump() for c in checks)]
        clocks = "; ".join(_clock_range(t.get("sm_clock_mhz")) for t in timings)
        gaps = "; ".join(_median(t.get("host_gap_ms")) for t in timings)
        print(
            f"| {name} | {workload} | {base['median_ms']:.4f} ({100 * rel:.1f}%) "
            f"| {medians} | {speedups} | {clocks} | {gaps} |"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
