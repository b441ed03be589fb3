"""Where a compiled candidate's extra time comes from: the harness's clock taken apart, in one
process, beside triton's do_bench.

    python3 -m benchmarks.gate_study PROBLEM.py [--modes eager,default,max-autotune]
                                     [--gates 1,2,4,8,16] [--samples 30] [--json OUT]

PROBLEM.py is a KernelBench-style file (benchmarks/acceptance/). For each mode (eager, or a
`torch.compile` mode) the model is timed by do_bench (median, one input buffer), then by the
harness's own `scripts.timing.Clock` with the gate fixed at each of `--gates` flushes, on the
harness's two alternating input buffers. Per gate it prints the start-to-end device time
(`raw`), what the gate took beyond the same gate run alone right after (`beyond ref`), what the
old fixed expectation (calibrated flush x gate + noise) would have charged (`old charge`), and
what the clock charges now (`charged`). Reading: if `raw` grows with the gate, the device really
runs the call slower after a longer flush train; if only `old charge` grows, the accounting did.
Last, at the harness's own gate size: one input buffer instead of two, the previous output
dropped before the next call instead of kept alive (CUDA-graph trees care), and both, which
is how do_bench calls it.
Needs a GPU (one line and exit 2 without).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path

ROTATE = 2


def load_problem(path: Path):
    spec = importlib.util.spec_from_file_location("gate_study_problem", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(module, mode: str):
    import torch

    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).cuda().eval()
    if mode == "eager":
        return model
    return torch.compile(model, mode=None if mode == "default" else mode)


def warmed(module, mode: str) -> tuple:
    """(the model in `mode`, fixed inputs, do_bench's median ms on them) after 5 warm calls."""
    import torch
    from triton.testing import do_bench

    fn, fixed = build(module, mode), inputs(module, 1)
    for _ in range(5):
        fn(*fixed)
    torch.cuda.synchronize()
    bench = do_bench(lambda: fn(*fixed), warmup=25, rep=100, return_mode="median")
    return fn, fixed, bench


def inputs(module, seed: int) -> list:
    import torch

    torch.manual_seed(seed)
    return [a.cuda() if isinstance(a, torch.Tensor) else a for a in module.get_inputs()]


def sample_gate(clock, flush, fn, fresh, gate, samples, rotate=True, keep=True) -> dict:
    """`samples` samples at a fixed gate (no retakes). Before each, new values are copied into
    the inputs as the child does, into two buffers in turn (`rotate`) or one; the previous
    sample's output stays alive during the next call as in the child (`keep`), or is dropped
    first, as do_bench does. `fresh` holds two sets of input values."""
    import torch

    slots = [list(fresh[0]), list(fresh[1])]
    slots = [[a.clone() if isinstance(a, torch.Tensor) else a for a in slot] for slot in slots]
    out = None
    raw, beyond, old, charged, early = [], [], [], [], 0
    for k in range(samples):
        args = slots[k % ROTATE if rotate else 0]
        for a, f in zip(args, fresh[(k // ROTATE) % 2]):
            if isinstance(a, torch.Tensor):
                a.copy_(f)
        clock.gate = gate
        if not keep:
            out = None
        out, ms, _ = clock._sample(fn, args, flush)
        raw.append(ms - clock.gate_excess_ms)
        beyond.append(clock.gate_run_ms - clock.gate_ref_ms)
        expected = gate * clock.gate_ms + clock.gate_tolerance_ms
        old.append(max(0.0, clock.gate_run_ms - expected))
        charged.append(clock.gate_excess_ms)
        early += int(clock.early)
    med = statistics.median
    return {
        "gate": gate,
        "rotate": rotate,
        "keep": keep,
        "raw_ms": med(raw),
        "raw_min_ms": min(raw),
        "beyond_ref_ms": med(beyond),
        "old_charge_ms": med(old),
        "charged_ms": med(charged),
        "timed_ms": med(r + c for r, c in zip(raw, charged)),
        "early": early,
    }


def open_study(prog: str, problem: Path):
    """(the problem's module, the harness's cache flush) for a study on the GPU; None, after
    one line saying why, without a GPU or without the problem file."""
    import torch

    if not torch.cuda.is_available():
        print(f"{prog}: needs a GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return None
    if not problem.is_file():
        print(f"{prog}: {problem}: no such problem file", file=sys.stderr)
        return None
    from scripts import timing
    from scripts.arch import detect, flush_bytes

    torch.set_grad_enabled(False)
    return load_problem(problem), timing.Flusher("cuda", flush_bytes(detect()))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="gate_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("problem", type=Path)
    ap.add_argument("--modes", default="eager,default,max-autotune")
    ap.add_argument("--gates", default="1,2,4,8,16")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    opened = open_study("gate_study", args.problem)
    if opened is None:
        return 2
    module, flush = opened
    import torch
    from triton.testing import do_bench

    from scripts import timing

    gates = [int(g) for g in args.gates.split(",")]
    rows = []
    for mode in args.modes.split(","):
        fn = build(module, mode)
        fixed = inputs(module, 1)
        fresh = [inputs(module, 2), inputs(module, 3)]
        for _ in range(5):
            fn(*fixed)
        torch.cuda.synchronize()
        bench = do_bench(lambda fn=fn, a=fixed: fn(*a), warmup=25, rep=100, return_mode="median")
        clock = timing.Clock("cuda")
        host = statistics.median(_host_ms(fn, fixed) for _ in range(5))
        clock.calibrate(flush, host)
        auto = clock.gate
        found = [sample_gate(clock, flush, fn, fresh, g, args.samples) for g in gates]
        for rotate, keep in ((False, True), (True, False), (False, False)):
            found.append(sample_gate(clock, flush, fn, fresh, auto, args.samples, rotate, keep))
        for r in found:
            r.update(mode=mode, do_bench_ms=bench, host_ms=host, auto_gate=auto)
            r["timed_vs_do_bench"] = r["timed_ms"] / bench - 1
            print(json.dumps(r), flush=True)
        rows += found
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print("\n| mode | gate | inputs | last output | raw ms | raw min | beyond ref ms | old charge ms | charged ms "
          "| timed ms | do_bench ms | timed vs do_bench | early |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['mode']} | {r['gate']} | {'rotated' if r['rotate'] else 'one buffer'} | "
              f"{'kept' if r['keep'] else 'dropped'} | "
              f"{r['raw_ms']:.4f} | {r['raw_min_ms']:.4f} | {r['beyond_ref_ms']:.4f} | "
              f"{r['old_charge_ms']:.4f} | {r['charged_ms']:.4f} | {r['timed_ms']:.4f} | "
              f"{r['do_bench_ms']:.4f} | {100 * r['timed_vs_do_bench']:+.1f}% | {r['early']} |")  # fmt: skip
    return 0


def _host_ms(fn, args, count: int = 3) -> float:
    import time

    import torch

    t0 = time.perf_counter_ns()
    for _ in range(count):
        fn(*args)
    t1 = time.perf_counter_ns()
    torch.cuda.synchronize()
    return (t1 - t0) / 1e6 / count


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
