"""Discover: probe every backend on this box, measure what each proposes on the frozen oracle,
and plan the lanes (optimize where an editable implementation exists, author elsewhere)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks import backends as registry
from kernel_bakeoff.tasks.backends import triton_templates
from kernel_bakeoff.tasks.backends.aiter_gemm import AiterGemm
from kernel_bakeoff.tasks.backends.base import BuildContext
from kernel_bakeoff.tasks.backends.trace import trace_isolated
from kernel_bakeoff.tasks.backends.wrappers import baseline_candidate
from kernel_bakeoff.tasks.check import judgement
from kernel_bakeoff.tasks.models.plan import (
    BackendStatus,
    CandidateRef,
    CandidateResult,
    DiscoverPlan,
    PlanEntry,
)
from kernel_bakeoff.tasks.search.score import beats, workload_ms

CheckFn = Callable[[CandidateRef], CandidateResult]
PrecompileFn = Callable[[list[CandidateRef]], None]


def _frozen_baseline_ms(ctx: BuildContext, measured: CandidateResult) -> dict[str, float]:
    """The one denominator: as the harness reports it, else as frozen in baseline.json."""
    out = {w.workload: w.baseline_ms for w in measured.verdict.workloads if w.baseline_ms}
    for name, median in ctx.baseline.medians().items():
        if name not in out and median:
            out[name] = median
    return out


def _engaged(result: CandidateResult) -> bool:
    if result.candidate.origin == AiterGemm.name:
        return AiterGemm.engaged(result)
    return True


def plan_lanes(ctx: BuildContext, statuses: list[BackendStatus]) -> list[PlanEntry]:
    """The incumbent's language always gets an optimize lane; every other lane language this box
    can run gets optimize when the frozen sources hold an editable implementation in it, else
    author."""
    plan = [
        PlanEntry(
            language=ctx.spec.language,
            mode="optimize",
            reason="the frozen input is written in it: the floor every rewrite must beat",
        )
    ]
    for language in registry.languages():
        if language == ctx.spec.language:
            continue
        backend = registry.lane_backend(language)
        where = backend.implementation(ctx)
        if where:
            plan.append(PlanEntry(language=language, mode="optimize", reason=f"editable: {where}"))
        else:
            plan.append(
                PlanEntry(language=language, mode="author", reason="no implementation in it yet")
            )
    incumbent = registry.lane_backend(ctx.spec.language)
    if incumbent is not None and not incumbent.is_available():
        plan[0].reason += f" (its backend is unavailable here: {incumbent.unavailable_reason()})"
    return plan


def _proposals(ctx: BuildContext, chosen, statuses: list[BackendStatus]) -> list[CandidateRef]:
    """What each available backend proposes, in order; a backend that fails to propose says so
    in its status's reason, never fatally."""
    proposed: list[CandidateRef] = []
    for backend, status in zip(chosen, statuses):
        if not status.available:
            continue
        try:
            refs = backend.candidates(ctx)
        except Exception as exc:  # one backend's failure is reported, never fatal
            status.reason = f"proposed nothing: {type(exc).__name__}: {exc}"
            continue
        if not refs and backend.lane and backend.implementation(ctx):
            status.reason = "measured as the baseline; its configurations are a search lane's"
        elif not refs:
            status.reason = backend.nothing_reason(ctx) or "nothing to propose for this op"
        proposed += refs
    return proposed


def traced(ctx: BuildContext) -> tuple[dict, list[dict], list[str]]:
    """The reference's trace summary: per-workload flops and bytes, its matches and notes. A
    reference the sandbox cannot trace is said in the notes, never fatal."""

    try:
        entry, found, notes = triton_templates.matches(ctx)
        if entry is None:
            return {}, [], notes
        loads = trace_isolated(ctx, entry)["workloads"]
    except Exception as exc:
        return {}, [], [f"could not trace the reference: {type(exc).__name__}: {exc}"[:300]]
    summary = {
        name: {"flops": w["flops"], "bytes": w["bytes"]}
        for name, w in loads.items()
        if "flops" in w
    }
    return summary, [m.as_dict() for m in found], notes


def discover(
    task: FrozenTask | Path,
    workdir: Path,
    check_fn: CheckFn,
    backends: list[str] | None = None,
    precompile_fn: PrecompileFn | None = None,
) -> DiscoverPlan:
    """Every available backend's proposals, checked after the input itself; `precompile_fn`
    (when given) gets the proposals first, to compile them side by side before any check."""
    ctx = BuildContext.load(task, workdir)  # opened once by the engine, or opened here
    chosen = registry.select(backends)
    statuses = [b.status(ctx.spec) for b in chosen]
    proposed = _proposals(ctx, chosen, statuses)
    if precompile_fn is not None:
        precompile_fn(proposed)
    baseline = check_fn(baseline_candidate(ctx))
    measured = [baseline] + [check_fn(ref) for ref in proposed]

    base_ms = _frozen_baseline_ms(ctx, baseline)
    summary, matches, notes = traced(ctx)
    # fastest first by the report's measure, the speedup against the frozen baseline
    passed = [r for r in judgement.by_speed(measured) if judgement.speed(r.verdict) is not None]
    best = passed[0] if passed else None
    env = [
        r
        for r in passed
        if r.candidate.mode == "tuned-env" and _engaged(r) and beats(r.verdict, base_ms)
    ]
    return DiscoverPlan(
        baseline_ms=base_ms,
        best_known_ms=workload_ms(best.verdict) if best else {},
        best_backend=(best.candidate.origin or best.candidate.name) if best else None,
        env_candidate=env[0] if env else None,  # the fastest: `passed` is in that order
        measured=measured,
        backends=statuses,
        plan=plan_lanes(ctx, statuses),
        traced=summary,
        matches=matches,
        match_notes=notes,
    )
