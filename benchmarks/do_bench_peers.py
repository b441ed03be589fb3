"""The benchmark problems timed outside the harness, with triton.testing.do_bench.

    python3 benchmarks/do_bench_peers.py [PROBLEM.py ...]   (default: benchmarks/problems/*.py)

A second opinion on the harness's figures in offline_bakeoff.md: each KernelBench-format
problem's Model, eager and under torch.compile (default mode), in this one process, timed by
do_bench (its own cache flush, 25 ms warm-up, 200 ms of repetitions; median ms). Needs a GPU.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def time_problem(problem, do_bench) -> tuple[float, float]:
    """(eager ms, torch.compile default ms) of the problem's Model on its own inputs."""
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).cuda()
    with torch.device("cuda"):
        inputs = problem.get_inputs()
    compiled = torch.compile(model)
    with torch.no_grad():
        compiled(*inputs)
        return (
            do_bench(lambda: model(*inputs), warmup=25, rep=200),
            do_bench(lambda: compiled(*inputs), warmup=25, rep=200),
        )


def main(argv: list[str]) -> int:
    if not torch.cuda.is_available():
        print("do_bench_peers needs a GPU", file=sys.stderr)
        return 2
    from triton.testing import do_bench

    problems = [Path(p) for p in argv] or sorted((ROOT / "benchmarks" / "problems").glob("*.py"))
    print(f"device {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print("| problem | do_bench eager ms | do_bench compile default ms |")
    print("| --- | --- | --- |")
    for path in problems:
        eager, fused = time_problem(load(path), do_bench)
        print(f"| {path.stem} | {eager:.4f} | {fused:.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
