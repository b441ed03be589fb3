"""What a check of a torch.compile candidate costs, started cold and warm.

    python -m benchmarks.compile_check [--checks 2] [--samples 5]

Freezes examples/rmsnorm_torch and checks benchmarks/candidates/rmsnorm_compiled.py
(torch.compile of the same function) `--checks` times with fresh interpreters
(BAKEOFF_WARM_START=0) and as many times forked from the warm server, which has imported
torch (not Dynamo or Inductor: the candidate's process imports those itself). Every check
compiles afresh: each gets its own empty caches.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from functools import partial
from pathlib import Path

import torch

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze, measure_baseline

ROOT = Path(__file__).resolve().parents[1]
CANDIDATE = ROOT / "benchmarks" / "candidates" / "rmsnorm_compiled.py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=2)
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args(argv)
    small = {"samples": args.samples, "warmup": 2, "trials": 2}
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else platform.machine()
    print(f"device: {device}; torch {torch.__version__}; python {platform.python_version()}")
    print("| start | check | status | wall s | in candidate s |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="bakeoff-compile-check-") as tmp:
        task = freeze(
            ROOT / "examples" / "rmsnorm_torch",
            Path(tmp) / "task",
            measure=partial(measure_baseline, **small),
        )
        for start in ("cold", "warm"):
            os.environ["BAKEOFF_WARM_START"] = "0" if start == "cold" else "1"
            for i in range(1, args.checks + 1):
                started = time.monotonic()
                verdict = check(task, CANDIDATE, **small)
                wall = time.monotonic() - started
                print(
                    f"| {start} | {i} | {verdict.status.value} | {wall:.1f} "
                    f"| {verdict.candidate_seconds:.1f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
