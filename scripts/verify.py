"""One workload's verdict in the judge: full checks of the trial outputs, projections of a random
subset of the timed outputs (chosen after the child is gone), then the timing cross-checks."""

from __future__ import annotations

import math
import random
import statistics

from kernel_bakeoff.scripts import compare, judge_clock, protocol, timing
from kernel_bakeoff.scripts.baseline import BaselineWorkload
from kernel_bakeoff.scripts.reference import Reference, load_outputs, nbytes
from kernel_bakeoff.scripts.verdict import Status, Timing, WorkloadVerdict

_rng = random.SystemRandom()


def verify_workload(
    judge,
    index: int,
    wl,
    record: protocol.ChildWorkload,
    reference: Reference,
    root,
    finished,
    info,
    beside: protocol.ChildWorkload | str | None = None,
    beside_finished=None,
) -> WorkloadVerdict:
    """`judge` is the scripts.judge.Judge (request, seeds, spec, baseline); `root` the child's
    results directory; `finished` how its process ended (its marker lines with arrival times,
    the judge's deals); `info` the ArchInfo; `beside` the frozen baseline's run in this check
    (or why it has none; None: not asked) and `beside_finished` that process's end."""
    req, seeds, tol_for = judge.req, judge.seeds[index], judge.spec.tolerance_for
    markers = finished.markers

    def verdict(status: Status, reason: str | None = None, **fields) -> WorkloadVerdict:
        return WorkloadVerdict(workload=wl.name, status=status, reason=reason, **fields)

    if len(record.trials) != len(seeds.trial_seeds):
        wanted = len(seeds.trial_seeds)
        return verdict(Status.FLAGGED, f"reported {len(record.trials)} trials, not {wanted}")
    worst, tol = 0.0, None
    for t, seed in enumerate(seeds.trial_seeds):
        _, refs = reference.outputs(wl, seed)
        tol = tol_for(compare.dtype_name(refs[0].dtype)) if refs else None
        outs = load_outputs(root, record.trials[t])
        if isinstance(outs, str):
            return verdict(Status.FLAGGED, f"trial {t + 1}: {outs}")
        if t == 0 and record.structure not in (None, reference.structure):
            reason = (
                f"output structure: it returns {record.structure}, "
                f"the reference returns {reference.structure}"
            )
            return verdict(Status.INCORRECT_SHAPE, reason, tolerance=tol)
        status, reason, err = compare.compare(outs, refs, tol_for)
        if status is not None:
            return verdict(status, f"trial {t + 1}: {reason}", max_rel_error=err, tolerance=tol)
        worst = max(worst, err)
    out_bytes = nbytes(refs)
    checked = dict(max_rel_error=worst, tolerance=tol)
    if not wl.timed:  # a size checked for correctness only (scripts/sizes.py): no timing
        return verdict(Status.PASSED, checked_only=True, **checked)

    samples, count = record.samples_ms, len(seeds.sample_seeds)
    if len(samples) != count:
        reason = f"reported {len(samples)} timed samples, {count} were asked for"
        return verdict(Status.FLAGGED, reason, **checked)
    if not all(math.isfinite(s) and s > 0 for s in samples):
        return verdict(Status.FLAGGED, "its timer reported a sample that is not a time", **checked)
    seen = judge_clock.spans(finished, index, count)  # the judge's clock, and the projections
    if isinstance(seen, str):
        return verdict(Status.FLAGGED, seen, **checked)
    span_ms, projections = seen
    for k in sorted(_rng.sample(range(count), min(count, req.checked_samples))):
        _, refs = reference.outputs(wl, seeds.sample_seeds[k])
        got = projections[k]
        if not isinstance(got, list) or not all(isinstance(g, list) for g in got):
            return verdict(Status.FLAGGED, f"timed call {k + 1}: garbled projections", **checked)
        if len(got) != len(refs):
            reason = f"timed call {k + 1}: returned {len(got)} outputs, expected {len(refs)}"
            return verdict(Status.INCORRECT_SHAPE, reason, **checked)
        for j, ref in enumerate(refs):
            if len(got[j]) != compare.PROJECTIONS or not all(
                isinstance(g, (int, float)) for g in got[j]
            ):
                return verdict(
                    Status.FLAGGED, f"timed call {k + 1}: garbled projections", **checked
                )
            project = reference.projector(seeds.projection_seed, j)
            problem = compare.projection_problem(
                got[j], ref, project, tol_for(compare.dtype_name(ref.dtype))
            )
            if problem:
                reason = f"timed call {k + 1}: output {j} differs from the reference: {problem}"
                return verdict(Status.INCORRECT_NUMERICAL, reason, **checked)

    wall = timing.wall_ms_per_call(markers, index, req.wall_blocks, record.wall_calls)
    if isinstance(wall, str):
        return verdict(Status.FLAGGED, wall, **checked)
    clock = timing.clock_kind(reference.device)
    host = timing.host_ms_per_call(markers, index, record.wall_calls)
    measured = with_diagnostics(timing.summarize(samples, clock, wall, host), record, count)
    measured = _judged_clock(judge, wl.name, measured, span_ms, record, beside, beside_finished)
    if measured.clock_least_ms is not None and measured.median_ms < measured.clock_least_ms:
        reason = (
            f"its reported median {measured.median_ms:.4g} ms is below what the judge's own "
            f"clock allows ({measured.clock_least_ms:.4g} ms: it saw {measured.judge_span_ms:.4g}"
            " ms from dealing each sample's inputs to its outputs, harness included)"
        )
        return verdict(Status.FLAGGED, reason, timing=measured, **checked)
    spec, dims = judge.spec, wl.dims
    moved = timing.bytes_needed(
        timing.evaluate(spec.extra.get("bytes"), dims), out_bytes, info.llc_bytes
    )
    flops = timing.evaluate(spec.flops, dims)
    floor = timing.floor_ms(moved, flops, info.peak_bandwidth, info.peak_flops)
    problem = timing.timing_problem(measured, floor)
    if problem:
        return verdict(Status.FLAGGED, problem, timing=measured, **checked)
    # The frozen figure is the one denominator: every candidate of a run is divided by the same
    # number. The baseline's run beside the candidate only tells whether the machine drifted.
    frozen = judge.baseline.get(wl.name)
    base = frozen.median_ms if frozen else None
    fields = {"frozen_baseline_ms": base}
    if isinstance(beside, str):
        return verdict(Status.HARNESS_ERROR, beside, timing=measured, **checked, **fields)
    if beside is not None:
        now = with_diagnostics(timing.summarize(beside.samples_ms, clock, None), beside, count)
        fields.update(baseline_timing=now, drift=drift(now, frozen))
    speedup = base / measured.median_ms if base else None
    return verdict(
        Status.PASSED, timing=measured, baseline_ms=base, speedup=speedup, **checked, **fields
    )


def _judged_clock(judge, name, measured: Timing, span_ms, record, beside, beside_finished):
    """`measured` with the judge's clock beside it: the shortest span, the harness's part of it
    in this process (its least, and its range), and for a candidate the least median those
    spans allow, the harness's part taken from the frozen baseline's run beside it, else from
    its freeze."""
    part, noise = judge_clock.harness_part(span_ms, measured.samples_ms)
    update = {
        "judge_span_ms": min(span_ms),
        "judge_overhead_ms": part,
        "judge_noise_ms": noise,
    }
    harness = None
    if isinstance(beside, protocol.ChildWorkload) and beside_finished is not None:
        index = [w.name for w in judge.spec.workloads].index(name)
        theirs = judge_clock.spans(beside_finished, index, len(beside.samples_ms))
        if not isinstance(theirs, str):
            part_b, noise_b = judge_clock.harness_part(theirs[0], beside.samples_ms)
            if record.gate_ms and beside.gate_ms:  # a device's gate is sized per process
                part_b += max(0.0, min(record.gate_ms) - min(beside.gate_ms))
            harness = (part_b, noise_b)  # the noise: a diagnostic of the host
    frozen = judge.baseline.get(name)
    if harness is None and frozen is not None and frozen.judge_overhead_ms is not None:
        harness = (frozen.judge_overhead_ms, frozen.judge_noise_ms or 0.0)
    if harness is not None and not judge.req.freezing:
        device = measured.clock != "host"
        update["clock_least_ms"] = judge_clock.least_median(span_ms, harness[0], device)
        update["baseline_overhead_ms"], update["baseline_noise_ms"] = harness
    return measured.model_copy(update=update)


def with_diagnostics(t: Timing, record: protocol.ChildWorkload, count: int) -> Timing:
    """The per-sample diagnostics the child reported (not judged), beside its samples."""
    host = record.host_call_ms[:count]
    return t.model_copy(
        update={
            "sm_clock_mhz": record.sm_clock_mhz[:count],
            "host_gap_ms": record.host_gap_ms[:count],
            "host_call_ms": statistics.median(host) if host else None,
            "host_bound_samples": record.host_bound,
            "gate_flushes": record.gate_flushes[:count],
            "gate_excess_ms": record.gate_excess_ms[:count],
            "overhang_ms": record.overhang_ms[:count],
        }
    )


def drifted(samples_ms: list[float], frozen: BaselineWorkload | None) -> bool:
    """Whether a run of the baseline (its samples) moved from its frozen figure beyond both
    spreads: the judge re-times the baseline once when it did, before the candidate runs."""
    return bool(samples_ms) and drift(timing.summarize(samples_ms, "", None), frozen) is not None


def drift(now: Timing, frozen: BaselineWorkload | None) -> str | None:
    """Named when the baseline now and at freeze differ by more than both their spreads."""
    was = frozen.median_ms if frozen else None
    if not was:
        return None
    gap = abs(now.median_ms - was)
    if gap <= now.spread_ms + (frozen.spread_ms or 0.0):
        return None
    return (
        f"the machine drifted: the frozen baseline ran at {now.median_ms:.4g} ms beside the "
        f"candidate, {now.median_ms / was:.3f}x its {was:.4g} ms at freeze (beyond both spreads)"
    )
