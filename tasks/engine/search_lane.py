"""A search lane: tune one language's implementation of a frozen op, every candidate checked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks import backends
from kernel_bakeoff.tasks.backends.base import BuildContext
from kernel_bakeoff.tasks.check import judgement
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from kernel_bakeoff.tasks.search.history import History
from kernel_bakeoff.tasks.search.runner import tune
from kernel_bakeoff.tasks.search.score import geomean_ms

CheckFn = Callable[[CandidateRef], CandidateResult]
PrecompileFn = Callable[[list[CandidateRef]], None]


def run_search(
    task: FrozenTask | Path,
    language: str,
    mode: str,
    workdir: Path,
    check_fn: CheckFn,
    *,
    budget_evals: int,
    budget_s: float,
    strategy: str = "auto",
    history_dir: Path | None = None,
    source: Path | None = None,
    seed: int = 0,
    precompile_fn: PrecompileFn | None = None,
) -> list[CandidateResult]:
    """Tune `language`'s configuration space on the frozen op; results best first.

    mode "optimize" tunes the frozen incumbent written in `language`; mode "author" tunes the
    implementation at `source` (a candidate an author wrote, in the op's format). Returns [] when
    the language has nothing tunable for this op. `precompile_fn` (when given) gets the
    candidates the search will check whatever their scores, before the first check.
    """
    if mode not in ("optimize", "author"):
        raise ValueError(f"mode is optimize or author, not {mode!r}")
    ctx = BuildContext.load(task, workdir)  # opened once by the engine, or opened here
    backend = backends.lane_backend(language)
    if backend is None or not backend.is_available():
        return []
    if mode == "author" and source is None:
        return []
    tunable = backend.tunable(ctx, source if mode == "author" else None)
    if tunable is None:
        return []
    history = History(history_dir) if history_dir else None
    warm = list(tunable.defaults)
    if history is not None:
        warm += history.best(ctx.oracle_sha256, ctx.arch.arch, language)
    results: list[CandidateResult] = []

    def prepare(configs: list[dict]) -> None:
        refs = []
        for config in configs:
            try:
                refs.append(tunable.build(config))
            except Exception:  # evaluate() builds it again and says why it cannot
                continue
        precompile_fn(refs)

    def evaluate(config: dict):
        try:
            ref = tunable.build(config)
        except Exception as exc:  # a config the generator cannot write is pruned, not fatal
            return None, f"could not build: {type(exc).__name__}: {exc}", None
        result = check_fn(ref)
        results.append(result)
        v = result.verdict
        return judgement.cost(v), (v.reason or v.status.value), result

    outcome = tune(
        tunable.space,
        evaluate,
        budget_evals=budget_evals,
        budget_s=budget_s,
        strategy=strategy,
        warm=warm,
        seed=seed,
        prepare=prepare if precompile_fn is not None else None,
    )
    if history is not None:
        history.record(
            ctx.oracle_sha256,
            ctx.arch.arch,
            language,
            # ms, not the optimizer's cost: comparable across freezes of one oracle
            [
                (t.config, geomean_ms(t.payload.verdict) if t.payload else None)
                for t in outcome.trials
                if t.status != "pruned"
            ],
        )
    return judgement.by_speed(results)
