"""Run the frozen op's own code over every workload in a child process, for tuners that learn
from real calls (TunableOp). `python -m kernel_bakeoff.tasks.backends.offline_run TASK_DIR ENTRY [REPEATS]`.

The op's code is the user's: the child runs in the box (scripts/box.py), the frozen task
read-only, only the tuner's output directory writable, the box's allow-listed environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    # here: the child in the box loads what it runs, its parent's callers import this module light
    import torch

    from kernel_bakeoff.scripts.formats import module_for
    from kernel_bakeoff.scripts.freeze import load_task

    task_dir, entry = Path(argv[0]), argv[1]
    repeats = int(argv[2]) if len(argv) > 2 else 3
    spec, src, _ = load_task(task_dir)
    fmt = module_for(spec.format)
    fn = fmt.load_callable(spec, src, entry, "cuda")
    for wl in spec.workloads:
        inputs = fmt.make_inputs(spec, src, wl, 7, "cuda")
        for _ in range(repeats):
            fn(*inputs)
        torch.cuda.synchronize()
        print(f"ran {wl.name} x{repeats}", flush=True)
    return 0


def run(task_dir: Path, entry: str, env: dict[str, str], timeout_s: float, log: Path) -> int:
    """Run main() in a boxed child with `env` added; it writes only `log`'s directory (where
    the tuner's files go), its output goes to `log`. Returns the exit code (124: timed out)."""
    from kernel_bakeoff.scripts import (  # here: the boxed child imports this module, and not these
        box,
        sandbox,
    )

    out = Path(log).resolve().parent
    scratch = out / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    full = {**sandbox.scrub_env(os.environ), **env}
    full.update(
        PYTHONPATH=str(ROOT),
        HOME=str(scratch),
        TMPDIR=str(scratch),
        XDG_CACHE_HOME=str(scratch / "cache"),
        TRITON_CACHE_DIR=str(scratch / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(scratch / "inductor"),
    )
    cmd = [sys.executable, "-m", "kernel_bakeoff.tasks.backends.offline_run", str(task_dir), entry]
    plan = box.plan(read=[task_dir], write=[out], cwd=str(out))
    finished = sandbox.run(cmd, env=full, cwd=out, log_path=log, timeout_s=timeout_s, box=plan)
    if finished.timed_out:
        with open(log, "a") as f:
            f.write(f"\ntimed out after {timeout_s:.0f} s\n")
        return 124
    why = box.reason(finished.returncode or 0)
    if why:
        with open(log, "a") as f:
            f.write(f"\n{why}\n")
    return finished.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
