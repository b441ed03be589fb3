"""Run the frozen op's own code over every workload in a child process, for tuners that learn
from real calls (TunableOp). `python -m tasks.backends.offline_run TASK_DIR ENTRY [REPEATS]`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    import torch

    from scripts.formats import module_for
    from scripts.freeze import load_task

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
    """Run main() in a child with `env` added; its output goes to `log`. Returns the exit code."""
    full = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tasks.backends.offline_run", str(task_dir), entry]
    with open(log, "w") as out:
        try:
            done = subprocess.run(
                cmd, cwd=ROOT, env=full, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            out.write(f"\ntimed out after {timeout_s:.0f} s\n")
            return 124
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
