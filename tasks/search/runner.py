"""The tuning loop, independent of kernels: ask a strategy, prune invalid points, evaluate the
rest within a budget of evaluations and seconds, tell the scores back."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kernel_bakeoff.tasks.search.space import Space
from kernel_bakeoff.tasks.search.strategies import choose


@dataclass
class Trial:
    config: dict
    score: float | None  # lower is better; None: failed, or pruned before evaluation
    status: str  # "evaluated", "failed" or "pruned"
    reason: str = ""
    payload: object = None
    seconds: float = 0.0


@dataclass
class Outcome:
    trials: list[Trial] = field(default_factory=list)
    strategy: str = ""
    stopped: str = ""  # "exhausted", "budget_evals" or "budget_s"

    @property
    def evaluated(self) -> list[Trial]:
        return [t for t in self.trials if t.status != "pruned"]

    @property
    def best(self) -> Trial | None:
        ok = [t for t in self.trials if t.score is not None]
        return min(ok, key=lambda t: t.score) if ok else None


Evaluate = Callable[[dict], tuple[float | None, str, object]]  # -> (score, reason, payload)


def tune(
    space: Space,
    evaluate: Evaluate,
    *,
    budget_evals: int,
    budget_s: float,
    strategy: str = "auto",
    warm: list[dict] | None = None,
    seed: int = 0,
    clock: Callable[[], float] = time.monotonic,
    prepare: Callable[[list[dict]], None] | None = None,
) -> Outcome:
    """Evaluate at most `budget_evals` configs; start none after `budget_s` seconds.
    `prepare` is first handed the valid configs among those the strategy will propose whatever
    the scores (`Strategy.ahead`), up to the budget: to compile them side by side."""
    cls = choose(strategy, space, budget_evals)
    strat = cls(space, warm=warm, seed=seed)
    out = Outcome(strategy=cls.name)
    start = clock()
    if prepare is not None:
        prepare([c for c in strat.ahead(budget_evals) if space.invalid(c) is None])
    while True:
        if len(out.evaluated) >= budget_evals:
            out.stopped = "budget_evals"
            break
        if clock() - start >= budget_s:
            out.stopped = "budget_s"
            break
        config = strat.ask()
        if config is None:
            out.stopped = "exhausted"
            break
        why = space.invalid(config)
        if why is not None:
            strat.tell(config, None)
            out.trials.append(Trial(config, None, "pruned", why))
            continue
        t0 = clock()
        score, reason, payload = evaluate(config)
        strat.tell(config, score)
        status = "evaluated" if score is not None else "failed"
        out.trials.append(Trial(config, score, status, reason, payload, clock() - t0))
    return out
