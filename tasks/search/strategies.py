"""Search strategies as plug-ins: ask for a config, tell its score (None: failed or pruned).

Every strategy first proposes its warm-start configs (the incumbent's own settings, then the best
ones earlier runs recorded), never proposes a config twice, and returns None when exhausted.
They know nothing about kernels: tests drive them from a recorded (config -> time) cache.

`ahead(n)` names the next configs a strategy proposes whatever it is told meanwhile (every one
of exhaustive and random search; the warm starts and random start-up trials of the model), so a
caller can compile them side by side before the first is timed; `ask` then hands out exactly
those, in that order.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from kernel_bakeoff.tasks.search.space import Space, key


class Strategy:
    name = ""

    def __init__(self, space: Space, warm: list[dict] | None = None, seed: int = 0):
        self.space = space
        self.rng = random.Random(seed)
        self.seen: dict[str, float | None] = {}
        self._warm = [c for c in (warm or []) if space.contains(c)]
        self._queued: list[dict] = []  # asked ahead, not yet handed out

    def _taken(self, k: str) -> bool:
        return k in self.seen or any(key(c) == k for c in self._queued)

    def _next_warm(self) -> dict | None:
        while self._warm:
            c = self._warm.pop(0)
            if not self._taken(key(c)):
                return c
        return None

    def ask(self) -> dict | None:
        return self._queued.pop(0) if self._queued else self._propose()

    def ahead(self, n: int) -> list[dict]:
        """Up to `n` configs that the next asks return, whatever is told in between."""
        while len(self._queued) < n:
            config = self._propose_blind()
            if config is None:
                break
            self._queued.append(config)
        return [dict(c) for c in self._queued[:n]]

    def _propose(self) -> dict | None:
        raise NotImplementedError

    def _propose_blind(self) -> dict | None:
        """The next proposal if it cannot depend on scores not yet told, else None."""
        return self._propose()

    def tell(self, config: dict, score: float | None) -> None:
        self.seen[key(config)] = score


class Exhaustive(Strategy):
    """Every point, warm starts first, then in the space's order. For small spaces."""

    name = "exhaustive"

    def __init__(self, space, warm=None, seed=0):
        super().__init__(space, warm, seed)
        self._points: Iterator[dict] = iter(space)

    def _propose(self):
        warm = self._next_warm()
        if warm is not None:
            return warm
        for c in self._points:
            if not self._taken(key(c)):
                return c
        return None


class RandomSearch(Strategy):
    """Uniform samples without repeats."""

    name = "random"
    max_draws = 2000

    def _propose(self):
        warm = self._next_warm()
        if warm is not None:
            return warm
        if len(self.seen) + len(self._queued) >= self.space.size:
            return None
        if self.space.size <= self.max_draws:
            left = [c for c in self.space if not self._taken(key(c))]
            return self.rng.choice(left) if left else None
        for _ in range(self.max_draws):
            c = self.space.sample(self.rng)
            if not self._taken(key(c)):
                return c
        return None


class ModelBased(Strategy):
    """Optuna's TPE sampler: a model of good and bad regions, fitted to what was told."""

    name = "optuna"
    max_repeats = 20

    def __init__(self, space, warm=None, seed=0):
        super().__init__(space, warm, seed)
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._startup = max(4, min(10, space.size // 10))
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=self._startup)
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self._trials: dict[str, object] = {}
        self._fallback = RandomSearch(space, seed=seed + 1)
        for c in self._warm:  # space values are None/bool/int/str: optuna takes them as they are
            self.study.enqueue_trial(dict(c))
        self._warm = []

    def _suggest(self, trial) -> dict:
        return {
            p.name: trial.suggest_categorical(p.name, list(p.values)) for p in self.space.params
        }

    def _propose_blind(self):
        """The enqueued warm starts and the start-up trials are drawn without the model."""
        if len(self.study.trials) >= self._startup:
            return None
        return self._propose()

    def _propose(self):
        for _ in range(self.max_repeats):
            if len(self.seen) + len(self._queued) >= self.space.size:
                return None
            trial = self.study.ask()
            config = self._suggest(trial)
            k = key(config)
            if k in self.seen:  # TPE repeats itself near an optimum: answer from memory
                self._finish(trial, self.seen[k])
                continue
            if k in self._trials:  # drawn again while asked ahead: not a trial of its own
                self.study.tell(trial, state=self._optuna.trial.TrialState.PRUNED)
                continue
            self._trials[k] = trial
            return config
        self._fallback.seen = {**self.seen, **{key(c): None for c in self._queued}}
        config = self._fallback.ask()
        if config is not None:
            self.study.enqueue_trial(dict(config))
            trial = self.study.ask()
            self._trials[key(config)] = trial
        return config

    def _finish(self, trial, score):
        if score is None:
            self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, score)

    def tell(self, config, score):
        super().tell(config, score)
        trial = self._trials.pop(key(config), None)
        if trial is not None:
            self._finish(trial, score)


STRATEGIES: dict[str, type[Strategy]] = {s.name: s for s in (Exhaustive, RandomSearch, ModelBased)}


def choose(name: str, space: Space, budget_evals: int) -> type[Strategy]:
    """'auto': exhaustive when the whole space fits the budget, else model-based (random when
    optuna is not installed)."""
    if name != "auto":
        if name not in STRATEGIES:
            raise ValueError(f"unknown strategy {name!r} (one of auto, {', '.join(STRATEGIES)})")
        return STRATEGIES[name]
    if space.size <= budget_evals:
        return Exhaustive
    try:
        import optuna  # noqa: F401
    except ImportError:
        return RandomSearch
    return ModelBased
