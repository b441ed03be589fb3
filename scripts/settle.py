"""Warm-up until the timing settles, by a rule rather than a fixed count.

A fixed warm-up of ten calls ended before a CPU baseline settled: its first timed samples were
its slowest (3.5 and 2.2 ms, then about 0.8 ms; issue #40), and the frozen median, the
denominator of every speedup, read ~12% slow. Here each warm-up call is taken as a sample is
(the harness's lead-in first, then the call, to a synchronise) and timed with the host's clock,
and warm-up goes on until the median of the last `WINDOW` calls is within `TOLERANCE` of the
median of the `WINDOW` before them: the call's time has stopped moving. It is bounded, by calls
and by seconds (`BAKEOFF_SETTLE_S`), because on a busy machine it may never settle; the timed
samples then carry that noise, and their spread says so (the reviewer's limit, a noisy frozen
baseline re-timed: tasks/check/quiet_baseline.py).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

WINDOW = 5  # calls per window: a median of five is not moved by one slow call
TOLERANCE = 0.05  # the last window's median within 5% of the one before: settled
MOST_CALLS = 200
MOST_S = 2.0  # beyond the fixed count; BAKEOFF_SETTLE_S changes it (0: the fixed count only)


def most_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("BAKEOFF_SETTLE_S", MOST_S)))
    except ValueError:
        return MOST_S


def settled(times_ms: list[float], window: int = WINDOW, tolerance: float = TOLERANCE) -> bool:
    """Whether the last `window` times' median is within `tolerance` of the `window` before."""
    if len(times_ms) < 2 * window:
        return False
    last = statistics.median(times_ms[-window:])
    before = statistics.median(times_ms[-2 * window : -window])
    return abs(last - before) <= tolerance * before


def warm(
    call: Callable[[], object],
    before: Callable[[], object],
    least: int,
    most_s: float | None = None,
    now_ns: Callable[[], int] = time.perf_counter_ns,
) -> list[float]:
    """Call `before()` then `call()` at least `least` times, then on until `settled` (at most
    `MOST_CALLS` calls, or `most_s` seconds beyond the first `least`); the times of `call` (ms)."""
    most_s = most_seconds() if most_s is None else most_s
    times: list[float] = []
    extra_from = None
    while len(times) < MOST_CALLS:
        before()
        t0 = now_ns()
        call()
        times.append((now_ns() - t0) / 1e6)
        if len(times) < least:
            continue
        if settled(times):
            break
        if extra_from is None:
            extra_from = now_ns()
        if now_ns() - extra_from >= most_s * 1e9:
            break
    return times
