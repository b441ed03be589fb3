"""The end-of-sample round trip, sample by sample: what an honest call's tail is made of, and how
settling it charges honest calls and calls that leave work on a side stream.

    python3 -m benchmarks.tail_study PROBLEM.py [--modes eager,default] [--samples 40]
                                     [--load N] [--json OUT]
    python3 -m benchmarks.tail_study --from RECORD.json

For each mode (eager or a `torch.compile` mode) and each call (honest; then 0.02 ms and 1 ms of
work left on a side stream the caller's stream never waits for), `--samples` samples of
`scripts.timing.Clock` at its own gate. After each, two idle round trips: after a device spin
as long as the sample's wait (`Clock.idle_tail`, the harness's reference) and after the gate's
own flushes. Every per-sample figure goes to `--json`, so any settling rule can be judged
afterwards; the table prints the medians and what `timing.settle` charges against each
reference. `--load N` keeps N other processes spinning on the host's cores throughout.

At ce42a09 the study also took every other sample with the host asking the end event in a loop
instead of sleeping in a synchronise (the e54282e clock): on the H200 that made tails 7-10 us
longer and charged 20 us of hidden work 11-16 us instead of 21-24, so the clock sleeps again
(records: benchmarks/results/tail_study_*_h200.json, key "way"). `--from` judges a record
again, no GPU: per entry the median tail and idle tail, and the median charge for the tail
against the spin reference, clipped at zero as `timing.settle` charges it and beyond twice the
idle tails' median deviation (the rule of branch settle-noise-allowance). The figures quoted
in benchmarks/gpu_acceptance.md come from that. Otherwise needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
from pathlib import Path

from benchmarks.gate_study import _host_ms, open_study, warmed
from benchmarks.settle_study import Spin, hidden

HIDDEN_MS = (0.02, 1.0)


def _spin_forever() -> None:
    while True:
        pass


def host_load(n: int) -> list:
    """`n` processes spinning on the host's cores until terminated."""
    spawn = multiprocessing.get_context("spawn")
    procs = [spawn.Process(target=_spin_forever, daemon=True) for _ in range(n)]
    for proc in procs:
        proc.start()
    return procs


def flush_tail(clock, flush) -> float:
    """The round trip after the gate's flushes alone, waited for as the sample was."""
    first, second = clock._event(enable_timing=True), clock._event(enable_timing=True)
    clock._sync()
    for _ in range(clock.gate):
        flush()
    clock._record(first)
    clock._sync()
    clock._record(second)
    clock._sync()
    return float(clock._elapsed(first, second))


def study(clock, flush, fn, args, samples: int) -> list[dict]:
    rows = []
    for _ in range(samples):
        _, ms, _ = clock._sample(fn, args, flush)
        rows.append(
            {
                "raw_ms": ms - clock.gate_excess_ms,
                "wait_ms": clock.wait_ms,
                "tail_ms": clock.tail_ms,
                "idle_spin_ms": clock.idle_tail(),
                "idle_flush_ms": flush_tail(clock, flush),
            }
        )
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


def charges_us(rows: list[dict], allowance: bool) -> float:
    """The median charge (us) for the tails against the spin reference's median; with
    `allowance`, only beyond twice the spin reference's median deviation."""
    idle = [r["idle_spin_ms"] for r in rows]
    mid = statistics.median(idle)
    noise = 2 * statistics.median(abs(t - mid) for t in idle) if allowance else 0.0
    return 1e3 * statistics.median(max(0.0, r["tail_ms"] - mid - noise) for r in rows)


def judge_again(path: Path) -> int:
    med = statistics.median
    print(f"{path}\n\n| mode | call | wait | tail us | idle tail us | charged us, clipped "
          "| charged us, beyond the noise |")  # fmt: skip
    print("| --- " * 7 + "|")
    for e in json.loads(path.read_text()):
        rows = e["samples"]
        print(f"| {e['mode']} | {e['variant']} | {e.get('way', 'sleep')} | "
              f"{1e3 * med(r['tail_ms'] for r in rows):.1f} | "
              f"{1e3 * med(r['idle_spin_ms'] for r in rows):.1f} | "
              f"{charges_us(rows, False):.1f} | {charges_us(rows, True):.1f} |")  # fmt: skip
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="tail_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("problem", type=Path, nargs="?")
    ap.add_argument("--from", dest="record", type=Path, help="judge a --json record again")
    ap.add_argument("--modes", default="eager,default")
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--load", type=int, default=0, help="host processes spinning meanwhile")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.record is not None:
        return judge_again(args.record)
    if args.problem is None:
        ap.error("a problem file, or --from RECORD.json")
    opened = open_study("tail_study", args.problem)
    if opened is None:
        return 2
    load = host_load(args.load)
    try:
        return run(args, *opened)
    finally:
        for proc in load:
            proc.terminate()


def run(args, module, flush) -> int:

    from scripts import timing

    spin = Spin()
    record = []
    for mode in args.modes.split(","):
        fn, fixed, bench = warmed(module, mode)
        calls = [("honest", fn)] + [(f"hidden {ms} ms", hidden(fn, spin, ms)) for ms in HIDDEN_MS]
        for variant, call in calls:
            clock = timing.Clock("cuda")
            clock.calibrate(flush, statistics.median(_host_ms(call, fixed) for _ in range(5)))
            rows = study(clock, flush, call, fixed, args.samples)
            entry = {"mode": mode, "variant": variant, "gate": clock.gate, "load": args.load}
            entry.update(do_bench_ms=bench, summary=summary(rows), samples=rows)
            record.append(entry)
            print(json.dumps({k: v for k, v in entry.items() if k != "samples"}), flush=True)
    if args.json:
        args.json.write_text(json.dumps(record, indent=1))
    print("\n| mode | call | do_bench ms | raw ms | tail ms | idle (spin) ms | idle (flush) ms "
          "| settled vs spin ms | settled vs flush ms |")  # fmt: skip
    print("| --- " * 9 + "|")
    for e in record:
        s = e["summary"]
        print(f"| {e['mode']} | {e['variant']} | {e['do_bench_ms']:.4f} | "
              f"{s['raw_ms']:.4f} | {s['tail_ms']:.4f} | {s['idle_spin_ms']:.4f} | "
              f"{s['idle_flush_ms']:.4f} | {s['settled_vs_idle_spin']:.4f} | "
              f"{s['settled_vs_idle_flush']:.4f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
