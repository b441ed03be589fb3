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

# A span is wall-clock time, and the host's other work only ever lengthens it: the process
# waits to be woken for its seed, or is preempted in the harness's work around the call. Beside
# two test workers on a 2-core machine, honest candidates' median spans ran 1.7-8 ms over their
# calls while the frozen baseline's least harness part, just before, was 0.6 ms. So the bound
# (`least_median`) compares least with least: the shortest span, less the baseline's least
# harness part (same inputs, same outputs, same harness code) and FIXED_MS, halved. A median
# below it claims calls more than twice as fast as even the judge's fastest sample allows. The
# harness's part is counted twice over: it moves with the candidate's own process too (a
# torch.compile candidate's compiled kernels leave OpenMP threads spinning beside the harness's
# next input draw; two compiled RMSNorm candidates of the suite read a part about 1 ms above the
# baseline's 4.6 ms).
SHARE = 0.5
FIXED_MS = 2.0  # a wake-up or preemption the shortest span can still hold on a loaded host
HARNESS_TIMES = 2.0
# A check whose only fault is a median below the bound runs again with fresh seeds, up to this
# many runs in all (scripts/judge.py): on the project's CI at 4adde2d (two test workers on 2
# cores) one honest candidate in a suite's run still read below it.
CLOCK_TRIES = 3
# On a device the candidate's process runs under the profiler (the stream audit) and the frozen
# baseline's does not, so every launch of the harness's own work around the call costs more in
# the candidate's: on an H100 (2026-12-06, d68e5b7) an honest RMSNorm's harness part was 3.0 ms
# against the baseline's 1.2 ms, and twice over flagged it.
DEVICE_HARNESS_TIMES = 4.0


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


def harness_part(span_ms: list[float], samples_ms: list[float]) -> tuple[float, float]:
    """The harness's part of a span in a process whose samples are believed (the frozen
    baseline's): its least (span - sample) over the samples, and how far it ranged above that
    (the host's noise while it ran: a diagnostic)."""
    parts = [max(0.0, s - t) for s, t in zip(span_ms, samples_ms)]
    return min(parts), max(parts) - min(parts)


def least_median(span_ms: list[float], harness_ms: float, device: bool = False) -> float:
    """The least median sample the judge's clock allows for these spans: half of the shortest
    span left after the harness's part (twice it; four times on a device) and FIXED_MS."""
    times = DEVICE_HARNESS_TIMES if device else HARNESS_TIMES
    return SHARE * (min(span_ms) - times * harness_ms - FIXED_MS)
