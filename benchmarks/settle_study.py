"""Where the harness's settle charge comes from: the end-of-sample round trip taken apart, in one
process, beside triton's do_bench.

    python3 -m benchmarks.settle_study PROBLEM.py [--modes eager,default,max-autotune]
                                       [--waits-ms 0.025,0.5,2,8] [--samples 30] [--json OUT]

The child adds to each sample how much later than an idle round trip its `settled` event came
(`scripts.timing.settle`): the tail from the sample's end event to an event recorded after a
device-wide synchronise, less the median tail of the same round trip after a 25 us device spin
(`Clock.idle_tail`). In the eb6e84f acceptance record that charge was, row for row, the whole
of every >= 100 us candidate's excess over do_bench (`benchmarks/gpu_acceptance.md`). Per mode
(eager or a `torch.compile` mode) this prints do_bench; the clock's start-to-end samples at its
own gate and their tails; the idle tail after spins of each `--waits-ms`; the idle tail after a
spin as long as the sample's own wait (its gate and the call); and the median sample settled
against the short reference and against the matched one. Then the same for the call followed
by 1 ms of work on a side stream it never joins (what the charge exists to catch): a reference
that clears an honest call must still charge that call about 1 ms. Reading: if the idle tail
grows with the spin, the host's wake-up after a long wait is the charge, and the reference
must wait as long as the sample did. Needs a GPU (one line and exit 2 without).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from benchmarks.gate_study import _host_ms, open_study, warmed

HIDDEN_MS = 1.0  # device work the hidden variant leaves on a side stream


class Spin:
    """Device busy for a given time (torch.cuda._sleep), calibrated against device events."""

    def __init__(self):
        import torch

        self.torch = torch
        cycles = 2_000_000
        times = []
        for _ in range(5):
            first, second = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            first.record()
            torch.cuda._sleep(cycles)
            second.record()
            torch.cuda.synchronize()
            times.append(first.elapsed_time(second))
        self.cycles_per_ms = cycles / statistics.median(times)

    def __call__(self, ms: float) -> None:
        self.torch.cuda._sleep(max(1, int(ms * self.cycles_per_ms)))

    def tail(self, wait_ms: float) -> float:
        """The clock's end-of-sample round trip after `wait_ms` of device work: spin, event,
        synchronise, event, synchronise; the two events' distance."""
        torch = self.torch
        first, second = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        torch.cuda.synchronize()
        self(wait_ms)
        first.record()
        torch.cuda.synchronize()
        second.record()
        torch.cuda.synchronize()
        return first.elapsed_time(second)


def hidden(fn, spin: Spin, ms: float = HIDDEN_MS):
    """fn, then `ms` of device work on a stream the caller's stream never waits for."""
    import torch

    side = torch.cuda.Stream()

    def call(*args):
        out = fn(*args)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            spin(ms)
        return out

    return call


def study(clock, flush, fn, args, spin: Spin, waits: list[float], samples: int) -> dict:
    """`samples` samples at the clock's gate; after each, the idle tails it is compared with.
    `tail_ms` and `idle_tail_ms` are the clock's own, `idle_tail_after_ms` and `matched_tail_ms`
    the same round trip after fixed and matched spins; the harness's figure is
    `settled_clock_ms` (`timing.settle` over the clock's own tails)."""
    from scripts import timing

    raw, tails, matched, short = [], [], [], []
    by_wait = {w: [] for w in waits}
    for _ in range(samples):
        _, ms, _ = clock._sample(fn, args, flush)
        raw.append(ms - clock.gate_excess_ms)
        tails.append(clock.tail_ms)
        short.append(clock.idle_tail())
        matched.append(spin.tail(clock.gate_run_ms + raw[-1]))
        for w in waits:
            by_wait[w].append(spin.tail(w))
    med = statistics.median
    idle = med(short)
    return {
        "gate": clock.gate,
        "raw_ms": med(raw),
        "tail_ms": med(tails),
        "idle_tail_ms": idle,
        "idle_tail_after_ms": {str(w): med(v) for w, v in by_wait.items()},
        "matched_tail_ms": med(matched),
        "settled_short_ms": med(r + max(0.0, t - idle) for r, t in zip(raw, tails)),
        "settled_matched_ms": med(r + max(0.0, t - m) for r, t, m in zip(raw, tails, matched)),
        "settled_clock_ms": med(timing.settle(raw, tails, short)),
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="settle_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("problem", type=Path)
    ap.add_argument("--modes", default="eager,default,max-autotune")
    ap.add_argument("--waits-ms", default="0.025,0.5,2,8")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    opened = open_study("settle_study", args.problem)
    if opened is None:
        return 2
    module, flush = opened

    from scripts import timing

    spin = Spin()
    waits = [float(w) for w in args.waits_ms.split(",")]
    rows = []
    for mode in args.modes.split(","):
        fn, fixed, bench = warmed(module, mode)
        for variant, call in (("honest", fn), ("hidden 1 ms", hidden(fn, spin))):
            clock = timing.Clock("cuda")
            clock.calibrate(flush, statistics.median(_host_ms(call, fixed) for _ in range(5)))
            row = study(clock, flush, call, fixed, spin, waits, args.samples)
            row.update(mode=mode, variant=variant, do_bench_ms=bench)
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    after = " | ".join(f"idle tail after {w} ms" for w in waits)
    print(f"\n| mode | call | gate | do_bench ms | raw ms | tail ms | {after} | matched tail ms "
          "| settled (25 us ref) ms | settled (matched ref) ms | settled by the clock ms |")  # fmt: skip
    print("| --- " * (10 + len(waits)) + "|")
    for r in rows:
        tails = " | ".join(f"{v:.4f}" for v in r["idle_tail_after_ms"].values())
        print(f"| {r['mode']} | {r['variant']} | {r['gate']} | {r['do_bench_ms']:.4f} | "
              f"{r['raw_ms']:.4f} | {r['tail_ms']:.4f} | {tails} | {r['matched_tail_ms']:.4f} | "
              f"{r['settled_short_ms']:.4f} | {r['settled_matched_ms']:.4f} | "
              f"{r['settled_clock_ms']:.4f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
