"""The end-of-sample round trip, sample by sample: what an honest call's tail is made of, and how
each way of settling it charges honest calls and calls that leave work on a side stream.

    python3 -m benchmarks.tail_study PROBLEM.py [--modes eager,default] [--samples 40]
                                     [--json OUT]

For each mode (eager or a `torch.compile` mode) and each call (honest; then 0.02 ms and 1 ms of
work left on a side stream the caller's stream never waits for), `--samples` samples of
`scripts.timing.Clock` at its own gate, alternating two ways of waiting for the end event: the
host asking the event (`Clock._drain`, since e54282e) and the host sleeping in a synchronise
(before it). After each sample, two idle round trips the same way: after a device spin as long
as the sample's wait (`Clock.idle_tail`) and after the gate's own flushes. Every per-sample
figure goes to `--json`, so any settling rule can be judged afterwards; the table prints the
medians and what `timing.settle` charges against each reference. Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from benchmarks.gate_study import _host_ms, build, inputs, open_study
from benchmarks.settle_study import Spin

HIDDEN_MS = (0.02, 1.0)


def hidden(fn, spin: Spin, ms: float):
    import torch

    side = torch.cuda.Stream()

    def call(*args):
        out = fn(*args)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            spin(ms)
        return out

    return call


def flush_tail(clock, flush) -> float:
    """The round trip after the gate's flushes alone, waited for as the sample was."""
    first, second = clock._event(enable_timing=True), clock._event(enable_timing=True)
    clock._sync()
    for _ in range(clock.gate):
        flush()
    clock._record(first)
    clock._drain(first)
    clock._record(second)
    clock._sync()
    return float(clock._elapsed(first, second))


def study(clock, flush, fn, args, samples: int) -> dict:
    polled = clock._drain
    slept = lambda ev: clock._sync()  # noqa: E731
    rows = {"poll": [], "sleep": []}
    for k in range(2 * samples):
        way = "poll" if k % 2 == 0 else "sleep"
        clock._drain = polled if way == "poll" else slept
        _, ms, _ = clock._sample(fn, args, flush)
        rows[way].append(
            {
                "raw_ms": ms - clock.gate_excess_ms,
                "wait_ms": clock.wait_ms,
                "tail_ms": clock.tail_ms,
                "idle_spin_ms": clock.idle_tail(),
                "idle_flush_ms": flush_tail(clock, flush),
            }
        )
    clock._drain = polled
    return rows


def summary(rows: list[dict]) -> dict:
    from scripts import timing

    med = statistics.median
    raw = [r["raw_ms"] for r in rows]
    tails = [r["tail_ms"] for r in rows]
    out = {k: med(r[k] for r in rows) for k in rows[0]}
    for ref in ("idle_spin_ms", "idle_flush_ms"):
        idle = [r[ref] for r in rows]
        out[f"settled_vs_{ref[:-3]}"] = med(timing.settle(raw, tails, idle))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="tail_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("problem", type=Path)
    ap.add_argument("--modes", default="eager,default")
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    opened = open_study("tail_study", args.problem)
    if opened is None:
        return 2
    module, flush = opened
    import torch
    from triton.testing import do_bench

    from scripts import timing

    spin = Spin()
    record = []
    for mode in args.modes.split(","):
        fn = build(module, mode)
        fixed = inputs(module, 1)
        for _ in range(5):
            fn(*fixed)
        torch.cuda.synchronize()
        bench = do_bench(lambda fn=fn, a=fixed: fn(*a), warmup=25, rep=100, return_mode="median")
        calls = [("honest", fn)] + [(f"hidden {ms} ms", hidden(fn, spin, ms)) for ms in HIDDEN_MS]
        for variant, call in calls:
            clock = timing.Clock("cuda")
            clock.calibrate(flush, statistics.median(_host_ms(call, fixed) for _ in range(5)))
            rows = study(clock, flush, call, fixed, args.samples)
            for way, per_sample in rows.items():
                entry = {"mode": mode, "variant": variant, "way": way, "gate": clock.gate}
                entry.update(do_bench_ms=bench, summary=summary(per_sample), samples=per_sample)
                record.append(entry)
                print(json.dumps({k: v for k, v in entry.items() if k != "samples"}), flush=True)
    if args.json:
        args.json.write_text(json.dumps(record, indent=1))
    print("\n| mode | call | wait | do_bench ms | raw ms | tail ms | idle (spin) ms | idle (flush) ms "
          "| settled vs spin ms | settled vs flush ms |")  # fmt: skip
    print("| --- " * 10 + "|")
    for e in record:
        s = e["summary"]
        print(f"| {e['mode']} | {e['variant']} | {e['way']} | {e['do_bench_ms']:.4f} | "
              f"{s['raw_ms']:.4f} | {s['tail_ms']:.4f} | {s['idle_spin_ms']:.4f} | "
              f"{s['idle_flush_ms']:.4f} | {s['settled_vs_idle_spin']:.4f} | "
              f"{s['settled_vs_idle_flush']:.4f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
