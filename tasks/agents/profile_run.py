"""Run one candidate once on one workload's inputs, for a profiler to watch (native format)."""

from __future__ import annotations

import sys
from pathlib import Path

from scripts import program
from scripts.freeze import load_task


def main(task_dir: str, candidate: str, workload: str) -> int:
    spec, _, _ = load_task(Path(task_dir))
    if spec.format != "native":
        print(f"profiling runs native-format ops only; this op is {spec.format}")
        return 2
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    fn = program.resolve_entry(Path(candidate), spec.entry, "candidate")
    inputs = program.native_inputs(spec, spec.workload(workload), 0, device)
    for _ in range(3):
        fn(*inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
