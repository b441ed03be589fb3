"""The judge's own clock over a process's timed samples (protocol.py, "dealt samples").

The judge deals each timed sample's input seed only when the process asks for it, after the
previous sample's `done` line came, and notes its clock; the `done` line carries the outputs'
projections, which the judge checks against the reference for samples it picks afterwards.
Everything a sample needs therefore lies inside its span (the deal to the `done` line): the
inputs cannot be made before the seed is known, and the projections cannot be sent before the
outputs exist. What the process reports as its own sample times is believed only as far as
these spans allow: a span also holds the harness's own work around the call (making the
inputs, the cache flush, on a device the gate, the projections), measured as the spans of the
frozen baseline's process minus its samples, with the same inputs, outputs and harness code.
"""

from __future__ import annotations

import json
import math

# How far below what the judge's clock allows a median may lie before it is a forgery. A span
# is a wall-clock time, and the harness's part of it (making the inputs, the flush, the
# projections) moves with the process and the host: on a 2-core machine an honest candidate's
# part was up to 0.6 ms above the frozen baseline's 0.45 ms when quiet (a sleeping candidate:
# its core idles between calls), and its median part 2.5 ms above it beside two test workers.
# Other work only lengthens a span, so the bound takes a low quantile of the candidate's spans
# (the first quartile: a forger must really be fast in a quarter of its calls to pass), the
# baseline's least disturbed part, and a slack of 1.5 times that part and a floor.
SLACK_OF_HARNESS = 1.5
SLACK_FLOOR_MS = 0.1


class Dealer:
    """The judge's side of the deal: `answer` is given every line the process sends."""

    def __init__(self, sample_seeds: list[list[int]]):
        self.seeds = sample_seeds  # per workload, per timed sample
        self.dealt: set[tuple[int, int]] = set()
        self.done: set[tuple[int, int]] = set()

    def answer(self, line: str) -> bytes | None:
        parts = line.split(" ", 3)
        if len(parts) < 3 or not (parts[1].isdigit() and parts[2].isdigit()):
            return None
        key = (int(parts[1]), int(parts[2]))
        if parts[0] == "done" and key in self.dealt:
            self.done.add(key)
            return None
        if parts[0] != "ready" or len(parts) != 3 or key in self.dealt:
            return None  # a second ask gets nothing: the process waits until its deadline
        i, k = key
        if i >= len(self.seeds) or k >= len(self.seeds[i]):
            return None
        if k > 0 and (i, k - 1) not in self.done:
            return None  # one sample at a time: spans never overlap
        self.dealt.add(key)
        return self.seeds[i][k].to_bytes(8, "little")


def spans(finished, index: int, count: int) -> tuple[list[float], list] | str:
    """Workload `index`'s spans (ms, by the judge's clock) and the projections each `done`
    line carried, or why they cannot be had (a forgery of the channel, or a sample missing)."""
    dealt: dict[int, int] = {}
    for line, at in finished.replies:
        parts = line.split()
        if parts[1] == str(index):
            dealt[int(parts[2])] = at
    done: dict[int, tuple[int, list]] = {}
    for line, at in finished.markers:
        parts = line.split(" ", 3)
        if parts[0] != "done" or len(parts) != 4 or parts[1] != str(index):
            continue
        if not parts[2].isdigit() or int(parts[2]) not in dealt:
            return f"a timed sample's end ({line[:40]!r}) came for a sample never dealt"
        k = int(parts[2])
        if k in done:
            return f"timed sample {k + 1}'s end came twice on the harness's channel"
        try:
            projections = json.loads(parts[3])
        except ValueError:
            return f"timed sample {k + 1}'s end is garbled"
        done[k] = (at, projections)
    if sorted(done) != list(range(count)):
        return f"the judge saw {len(done)} of {count} timed samples end on its channel"
    ms = [(done[k][0] - dealt[k]) / 1e6 for k in range(count)]
    if not all(math.isfinite(s) and s > 0 for s in ms):
        return "a timed sample ended before the judge dealt it"
    return ms, [done[k][1] for k in range(count)]


def overhead(span_ms: list[float], samples_ms: list[float]) -> float:
    """The harness's part of a span, from a process whose samples are believed (the frozen
    baseline's): the least of span - sample over its samples."""
    return max(0.0, min(s - t for s, t in zip(span_ms, samples_ms)))


def low_span(span_ms: list[float]) -> float:
    """The first quartile of the spans (the smallest of fewer than five)."""
    return sorted(span_ms)[(len(span_ms) - 1) // 4]


def least_median(span_ms: list[float], harness_ms: float) -> float:
    """The least median sample the judge's clock allows for these spans: their first quartile
    less the harness's part and the slack. A candidate's median below it reports calls faster
    than the judge saw them happen."""
    slack = SLACK_OF_HARNESS * harness_ms + SLACK_FLOOR_MS
    return low_span(span_ms) - harness_ms - slack
