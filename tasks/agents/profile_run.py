"""Run one candidate on one workload's inputs, for a profiler to watch (native format).

With `--torch-profiler` (a host without a GPU, where neither ncu nor rocprofv3 runs) the calls
run under torch.profiler, and one line starting `profile_parse.TORCH_MARK` says what it saw:
per operator its calls and self time, and the wall time of the calls."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from kernel_bakeoff.scripts import program
from kernel_bakeoff.scripts.freeze import load_task
from kernel_bakeoff.tasks.agents.profile_parse import CALLS, TORCH_MARK


def main(argv: list[str]) -> int:
    """argv: TASK_DIR CANDIDATE WORKLOAD [--torch-profiler] (a fork's `main`, as `python -m`)."""
    task_dir, candidate, workload, *mode = argv
    spec, _, _ = load_task(Path(task_dir))
    if spec.format != "native":
        print(f"profiling runs native-format ops only; this op is {spec.format}")
        return 2
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    fn = program.resolve_entry(Path(candidate), spec.entry, "candidate")
    inputs = program.native_inputs(spec, spec.workload(workload), 0, device)
    if "--torch-profiler" in mode:
        return torch_profile(fn, inputs)
    for _ in range(CALLS):
        fn(*inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    return 0


def torch_profile(fn, inputs) -> int:
    from torch.profiler import ProfilerActivity, profile

    fn(*inputs)  # the first call compiles (Triton, torch.compile): not what is profiled
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(CALLS):
            fn(*inputs)
        wall_us = (time.perf_counter() - start) * 1e6
    rows = [
        {"name": e.key, "calls": e.count, "self_us": e.self_cpu_time_total}
        for e in prof.key_averages()
        if e.self_cpu_time_total > 0
    ]
    print(TORCH_MARK + json.dumps({"rows": rows, "wall_us": wall_us, "calls": CALLS}), flush=True)
    # Out at once: an exit handler or thread of the candidate's prints no line after this one
    # (the parser reads the last). A digest is advice all the same (profile_parse says why).
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
