"""Why a torch.compile candidate reads slower in the harness than beside do_bench: the same
candidate compiled and timed several ways, each in a fresh process with empty compiler caches.

    python3 -m benchmarks.compile_gap_study PROBLEM.py [--modes default,max-autotune-no-cudagraphs]
                                            [--deadline-s 420] [--json OUT]

PROBLEM.py is a KernelBench-style file (benchmarks/acceptance/). The candidate is what Discover
writes for a mode: the problem's `Model` with `forward` wrapped in `torch.compile(mode=...,
dynamic=False)` (`cd` for coordinate-descent tuning in default mode). Per mode:

- `plain`: build, first call (compiles and autotunes), do_bench (median);
- `det-first`: as the harness's candidate process does, the first calls (the correctness
  trials) run under its poisoned allocations (deterministic algorithms, uninitialised memory
  filled), then the first call outside them (Dynamo compiles again), then do_bench;
- `det-after`: the first call outside the poisoned allocations, the trials after, do_bench;
- `harness`: `bakeoff check PROBLEM CANDIDATE --json` on a file of that candidate: its median.

Reading: if `det-first` reads like `harness` and `plain`/`det-after` like do_bench's peers, the
compile done under the trials' deterministic mode is what the timed calls inherit. Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = {
    "default": {"mode": None},
    "max-autotune-no-cudagraphs": {"mode": "max-autotune-no-cudagraphs"},
    "max-autotune": {"mode": "max-autotune"},
    "cd": {"options": {"coordinate_descent_tuning": True}},
}
TRIALS = 3

CANDIDATE = '''"""{problem} through torch.compile({compile!r}), as Discover writes it."""
import importlib.util as _ilu

import torch

_spec = _ilu.spec_from_file_location("_gap_study_src", {problem!r})
_src = _ilu.module_from_spec(_spec)
_spec.loader.exec_module(_src)


class ModelNew(_src.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._compiled = torch.compile(super().forward, dynamic=False, **{compile!r})

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)


get_inputs = _src.get_inputs
get_init_inputs = _src.get_init_inputs
'''


def worker(problem: str, mode: str, order: str) -> dict:
    """One variant in this (fresh) process: `order` is plain, det-first or det-after."""
    import importlib.util

    import torch
    from triton.testing import do_bench

    from scripts.child import poisoned_allocations

    torch.set_grad_enabled(False)
    spec = importlib.util.spec_from_file_location("gap_study_problem", problem)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).cuda().eval()
    fn = torch.compile(model.forward, dynamic=False, **MODES[mode])

    def fresh(seed):
        torch.manual_seed(seed)
        return [a.cuda() if isinstance(a, torch.Tensor) else a for a in module.get_inputs()]

    def trials():
        for t in range(TRIALS):
            with poisoned_allocations():
                fn(*fresh(10 + t))
                torch.cuda.synchronize()

    args = fresh(1)
    t0 = time.perf_counter()
    if order == "det-first":
        trials()
    fn(*args)
    torch.cuda.synchronize()
    if order == "det-after":
        trials()
    compile_s = time.perf_counter() - t0
    for _ in range(5):
        fn(*args)
    torch.cuda.synchronize()
    ms = do_bench(lambda: fn(*args), warmup=25, rep=100, return_mode="median")
    return {"mode": mode, "variant": order, "ms": ms, "first_calls_s": compile_s}


def run_worker(problem: Path, mode: str, order: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="gap-study-") as tmp:
        env = dict(os.environ)
        env.update(
            TORCHINDUCTOR_CACHE_DIR=f"{tmp}/inductor",
            TRITON_CACHE_DIR=f"{tmp}/triton",
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        )
        argv = [sys.executable, "-m", "benchmarks.compile_gap_study", "--worker"]
        argv += [str(problem), mode, order]
        return _last_json(argv, env, timeout, {"mode": mode, "variant": order})


def run_harness(problem: Path, mode: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="gap-study-") as tmp:
        cand = Path(tmp) / "candidate.py"
        cand.write_text(CANDIDATE.format(problem=str(problem.resolve()), compile=MODES[mode]))
        argv = [sys.executable, "-m", "flows.cli", "check", str(problem), str(cand), "--json"]
        row = _last_json(argv, dict(os.environ), timeout, {"mode": mode, "variant": "harness"})
    if "workloads" in row:
        wl = row["workloads"][0]
        timing = wl.get("timing") or {}
        row = {
            "mode": mode,
            "variant": "harness",
            "status": row["status"],
            "ms": timing.get("median_ms"),
            "baseline_ms": wl.get("baseline_ms"),
            "reason": row.get("reason"),
        }
    return row


def _last_json(argv, env, timeout, row) -> dict:
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {**row, "error": f"timed out after {timeout:.0f} s"}
    line = next((x for x in proc.stdout.splitlines()[::-1] if x.startswith("{")), None)
    if line is None:
        return {**row, "error": f"exit {proc.returncode}: {(proc.stderr or proc.stdout)[-600:]}"}
    return {**json.loads(line), "wall_s": time.monotonic() - t0}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        print(json.dumps(worker(*argv[1:4])), flush=True)
        return 0
    ap = argparse.ArgumentParser(prog="compile_gap_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("problem", type=Path)
    ap.add_argument("--modes", default="max-autotune-no-cudagraphs,default,cd")
    ap.add_argument("--variants", default="plain,det-first,det-after,harness")
    ap.add_argument("--deadline-s", type=float, default=420.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if not args.problem.is_file():
        print(f"compile_gap_study: {args.problem}: no such problem file", file=sys.stderr)
        return 2
    unknown = [m for m in args.modes.split(",") if m not in MODES]
    if unknown:
        print(f"compile_gap_study: unknown mode {unknown[0]!r} (one of {', '.join(MODES)})",
              file=sys.stderr)  # fmt: skip
        return 2
    start = time.monotonic()
    rows = []
    for mode in args.modes.split(","):
        for variant in args.variants.split(","):
            left = args.deadline_s - (time.monotonic() - start)
            if left < 45:
                rows.append({"mode": mode, "variant": variant, "error": "not reached"})
                continue
            if variant == "harness":
                row = run_harness(args.problem, mode, left - 5)
            else:
                row = run_worker(args.problem, mode, variant, left - 5)
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print("\n| mode | variant | ms | note |\n| --- | --- | --- | --- |")
    for r in rows:
        ms = f"{r['ms']:.4f}" if r.get("ms") else "-"
        note = r.get("error") or r.get("status") or f"first calls {r.get('first_calls_s', 0):.1f} s"
        print(f"| {r['mode']} | {r['variant']} | {ms} | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
