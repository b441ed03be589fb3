"""Work left on other streams, read on the device's clock: whether the profiler's activity
records (CUPTI through torch.profiler) can replace the end-of-sample round trip that the
harness charges today, and what they cost.

    python3 -m benchmarks.stream_audit_study PROBLEM.py [--modes eager,default] [--samples 30]
                                             [--json OUT]

Why: until 37eb242 the harness added to each sample how much later than an idle round trip an
event recorded after a device-wide synchronise came (a settle charge). On the H200 honest
samples' round trips ran 2-23 us over the idle ones (the 0c4df87 acceptance), and that charge
was the whole of their excess over do_bench. A second synchronise on the host to tell left-over
work apart (d827b8d) took 9-35 us of host time in the candidate's process and missed 20 us of
hidden work (benchmarks/gpu_acceptance.md). The profiler's records carry every kernel, copy and
fill with its stream and its start and end on the device's clock, whatever stream it ran on.
This study's answer (benchmarks/results/stream_audit_*_h200.json) is why the harness now reads
the overhang from the device trace (scripts/stream_audit.py).

For each mode (eager or a `torch.compile` mode) and each call (honest; 0.02 ms of extra work on
a side stream the caller's stream waits for; 0.02 ms and 1 ms on one it never waits for), it
takes `--samples` samples in the harness's shape (synchronise, the calibrated gate of flushes,
start event, the call, end event, synchronise) twice: without the profiler, and with it
recording the whole loop. Each profiled sample also launches a marker kernel on the caller's
stream right after its end event; a sample's overhang is how long after the marker started the
last of the call's device work ended (0 when everything the call launched was done by its end
event). Printed per row: do_bench, the event-timed median without and with the profiler (the
profiler's cost on the device), the median overhang (what a settle on the device's clock would
charge), and the host's seconds to profile and read the trace. Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.gate_study import _host_ms, open_study, warmed
from scripts.stream_audit import overhangs


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


def hidden(fn, spin: Spin, ms: float):
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


def joined(fn, spin: Spin, ms: float):
    """fn, then `ms` of device work on a side stream that the caller's stream waits for."""
    import torch

    side = torch.cuda.Stream()

    def call(*args):
        out = fn(*args)
        caller = torch.cuda.current_stream()
        side.wait_stream(caller)
        with torch.cuda.stream(side):
            spin(ms)
        caller.wait_stream(side)
        return out

    return call


def sample_loop(clock, flush, call, args, samples: int, profiled: bool) -> dict:
    """`samples` event-timed samples at the clock's gate; with `profiled`, under the profiler,
    with a marker kernel after each end event, and the overhangs read from its trace."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    marker = torch.zeros(1, device="cuda")
    times, early = [], []

    def one(k: int) -> None:
        clock.sync()
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        flush()
        for _ in range(clock.gate):
            flush()
        start.record()
        if profiled:
            with record_function(f"call {k}"):
                call(*args)
            end.record()
            with record_function(f"marker {k}"):
                marker.add_(1)
        else:
            call(*args)
            end.record()
        early.append(bool(start.query()))  # the gate ran out before the host queued the call
        clock.sync()
        times.append(start.elapsed_time(end))

    out = {"profiled": profiled}
    if not profiled:
        for k in range(samples):
            one(k)
        return out | {"median_ms": statistics.median(times), "early": sum(early)}
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for k in range(samples):
            one(k)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text()).get("traceEvents", [])
    hangs = [ms for _, ms in sorted(overhangs(events).items())]
    out |= {
        "median_ms": statistics.median(times),
        "early": sum(early),
        "categories": sorted({str(e.get("cat")) for e in events}),
        "overhang_ms": hangs,
        "overhang_median_ms": statistics.median(hangs) if hangs else None,
        "samples_read": len(hangs),
        "profile_s": t1 - t0,
        "read_s": time.perf_counter() - t1,
    }
    return out


def run(args, module, flush) -> int:

    from scripts import timing

    spin = Spin()
    record = []
    for mode in args.modes.split(","):
        fn, fixed, bench = warmed(module, mode)
        calls = [("honest", fn), ("joined 0.02 ms", joined(fn, spin, 0.02))]
        calls += [(f"hidden {ms} ms", hidden(fn, spin, ms)) for ms in (0.02, 1.0)]
        for variant, call in calls:
            clock = timing.Clock("cuda")
            clock.calibrate(flush, statistics.median(_host_ms(call, fixed) for _ in range(5)))
            plain = sample_loop(clock, flush, call, fixed, args.samples, profiled=False)
            traced = sample_loop(clock, flush, call, fixed, args.samples, profiled=True)
            entry = {"mode": mode, "variant": variant, "gate": clock.gate, "do_bench_ms": bench}
            entry.update(plain=plain, traced=traced)
            record.append(entry)
            brief = {k: v for k, v in traced.items() if k != "overhang_ms"}
            print(json.dumps({**entry, "traced": brief}), flush=True)
    if args.json:
        args.json.write_text(json.dumps(record, indent=1))
    print("\n| mode | call | do_bench ms | events ms | events ms, profiled | overhang ms "
          "| samples read | profile s | read s |")  # fmt: skip
    print("| --- " * 9 + "|")
    for e in record:
        p, t = e["plain"], e["traced"]
        hang = t["overhang_median_ms"]
        print(f"| {e['mode']} | {e['variant']} | {e['do_bench_ms']:.4f} | {p['median_ms']:.4f} | "
              f"{t['median_ms']:.4f} | {'-' if hang is None else f'{hang:.4f}'} | "
              f"{t['samples_read']} | {t['profile_s']:.2f} | {t['read_s']:.2f} |")  # fmt: skip
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="stream_audit_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("problem", type=Path)
    ap.add_argument("--modes", default="eager,default")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    opened = open_study("stream_audit_study", args.problem)
    if opened is None:
        return 2
    return run(args, *opened)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
