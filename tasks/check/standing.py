"""Whether a checked candidate's figure stands: the review rules, applied after the judge by
tasks/check/judgement.py (the one place a verdict becomes a standing, which the reviewers and
the report's ranking call). The judge decides pass or fail; these decide whether a passing
figure is one to act on: enough samples, taken on a quiet device, a frozen baseline that did
not drift, a win the host can keep up with."""

from __future__ import annotations

import statistics
from pathlib import Path

from kernel_bakeoff.scripts.frozen_task import FrozenTask, spec_and_baseline
from kernel_bakeoff.scripts.timing import MIN_SAMPLES
from kernel_bakeoff.scripts.verdict import WorkloadVerdict
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.run.settings import current

# A timing whose interquartile range is over this share of its median was taken on a busy or
# unstable device: its speedup is not a number to act on. BAKEOFF_REVIEW_MAX_SPREAD overrides it
# on a host known to be shared (a loaded CPU box times interpreted Triton 40-70% apart).
MAX_RELATIVE_SPREAD = 0.25


def max_relative_spread() -> float:
    given = current().review_max_spread
    return MAX_RELATIVE_SPREAD if given is None else given


def drift_matters(w: WorkloadVerdict) -> bool:
    """Whether the frozen baseline's move since freeze (`w.drift`, beyond both spreads) could
    account for this workload's win. On a GPU both spreads are a few hundredths of a per cent,
    so a move of 0.7% over a run named a drift and flagged a 1.31x win (the H100, 2026-12-06).
    The win stands when the candidate beats the lower of the two baseline figures, frozen and
    beside, by more than twice the move: either denominator then gives the same answer."""
    if not w.drift:
        return False
    t, beside, frozen = w.timing, w.baseline_timing, w.frozen_baseline_ms or w.baseline_ms
    if t is None or beside is None or not frozen or t.median_ms <= 0:
        return True
    move = abs(beside.median_ms - frozen) / frozen
    return min(beside.median_ms, frozen) / t.median_ms <= 1 + 2 * move


def host_paced(w: WorkloadVerdict) -> str | None:
    """Why this workload's win is lost at the host's pace (None when it is not): on a device,
    a host that takes longer to queue a call than the device takes to run it sets the pace of
    a caller's loop, which then runs no faster than the baseline's own loop (its device time,
    or its host's time per call in the run beside, whichever is longer). FlagGems' fp32 GEMM
    on the H100 (2026-12-06): 2.085 ms on the device, 3.84 ms of host a call, 0.69x cuBLAS."""
    t, frozen = w.timing, w.frozen_baseline_ms or w.baseline_ms
    if t is None or t.clock == "host" or not frozen or t.median_ms <= 0:
        return None
    if not t.host_call_ms or t.host_call_ms <= t.median_ms:
        return None
    beside = w.baseline_timing.host_call_ms if w.baseline_timing else None
    pace = max(frozen, beside or 0.0) / t.host_call_ms
    if pace > 1 + t.spread_ms / t.median_ms:
        return None
    return (
        f"workload {w.workload}: host-bound: its host takes {t.host_call_ms:.4g} ms to queue a "
        f"call, more than its {t.median_ms:.4g} ms on the device; called in a loop it runs at "
        f"the host's pace, {pace:.3f}x the baseline's"
    )


def timing_doubts(result: CandidateResult) -> list[str]:
    """Why this candidate's timings are not numbers to act on (empty when they are).

    Whether the timer saw all the work is the harness's question (it FLAGs such verdicts); the
    reviewer asks whether the samples were taken on a quiet device and are enough of them."""
    reasons = []
    for w in result.verdict.workloads:
        t = w.timing
        if t is None:
            continue
        if drift_matters(w):  # the baseline beside it moved as much as the win: a moved machine
            reasons.append(f"workload {w.workload}: {w.drift}")
        if paced := host_paced(w):  # a caller's loop waits on the host: no win anyone sees
            reasons.append(paced)
        rel = t.spread_ms / t.median_ms if t.median_ms > 0 else float("inf")
        limit = max_relative_spread()
        if rel > limit:
            reasons.append(
                f"workload {w.workload}: timing spread is {rel:.0%} of the median "
                f"(over {limit:.0%}): busy or unstable device"
            )
        if t.sample_count < MIN_SAMPLES:
            reasons.append(
                f"workload {w.workload}: only {t.sample_count} timed samples (< {MIN_SAMPLES})"
            )
    return reasons


def baseline_stats(task: FrozenTask | Path) -> tuple[dict[str, float], dict[str, float]]:
    """(median ms, relative interquartile range) per workload of the frozen baseline of `task`
    (opened once, or its directory)."""
    spec, base = spec_and_baseline(task)
    medians, spreads = {}, {}
    timed = [w.name for w in spec.workloads if w.timed]  # not checked-only
    for name in timed:  # the spec's order, not the file's
        wl = base.workloads[name]
        medians[name] = wl.median_ms
        samples = wl.samples()
        if len(samples) > 1 and wl.median_ms > 0:
            q = statistics.quantiles(samples, n=4)
            spreads[name] = (q[2] - q[0]) / wl.median_ms
        else:
            spreads[name] = 0.0
    return medians, spreads


def noisy_baseline(task: FrozenTask | Path) -> str | None:
    """One line when the frozen baseline's spread (interquartile range over median) is above
    what the reviewer accepts of a candidate's: every speedup divides by that figure, so the
    race would be run against noise. None when it is quiet enough (or there is no baseline)."""
    try:
        _, spreads = baseline_stats(task)
    except (OSError, ValueError, KeyError):
        return None
    limit = max_relative_spread()
    worst = max(((rel, name) for name, rel in spreads.items()), default=(0.0, ""))
    if worst[0] <= limit:
        return None
    return (
        f"the machine was busy: the frozen baseline's spread is {worst[0]:.0%} of its median "
        f"(workload {worst[1]}; a candidate's may be {limit:.0%} at most), and every speedup "
        "divides by it: re-freeze on a quiet machine"
    )
