"""Strategies replayed against recorded (config -> time) caches, Kernel Tuner style: no kernel
runs; a simulated clock advances by each recorded time."""

import json
import statistics
import sys

import pytest

from kernel_bakeoff.tasks.search import strategies
from kernel_bakeoff.tasks.search.history import History
from kernel_bakeoff.tasks.search.runner import tune
from kernel_bakeoff.tasks.search.space import Param, Space, key
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"


class Replay:
    """evaluate() from a recorded cache, with a clock that only moves when a config 'runs'."""

    def __init__(self, name):
        data = json.loads((DATA / f"cache_{name}.json").read_text())
        self.times = {key(e["config"]): e["time_ms"] for e in data["entries"]}
        first = data["entries"][0]["config"]
        names = list(first)
        values = {n: [] for n in names}
        for e in data["entries"]:
            for n in names:
                if e["config"][n] not in values[n]:
                    values[n].append(e["config"][n])
        self.space = Space([Param(n, tuple(values[n])) for n in names])
        self.now = 0.0
        self.calls = []

    def clock(self):
        return self.now

    def evaluate(self, config):
        self.calls.append(config)
        t = self.times[key(config)]
        self.now += (t or 1.0) / 1e3
        return t, "" if t is not None else "INCORRECT_NUMERICAL", None

    def rank(self, score):
        return sorted(t for t in self.times.values() if t is not None).index(score)


def run(replay, **kw):
    return tune(replay.space, replay.evaluate, clock=replay.clock, **kw)


def test_exhaustive_finds_the_recorded_optimum_and_keeps_failures():
    r = Replay("softmax_block")
    out = run(r, budget_evals=100, budget_s=1e9, strategy="exhaustive")
    assert out.stopped == "exhausted" and len(out.trials) == 11
    assert out.best.config == min(
        (c for c in r.space if r.times[key(c)] is not None), key=lambda c: r.times[key(c)]
    )
    failed = [t.config["BLOCK"] for t in out.trials if t.status == "failed"]
    assert failed == [16, 32, 64, 128, 256, 512]  # rows of 1000 need BLOCK >= 1024


@pytest.mark.parametrize("name", ["random", "optuna"])
def test_budget_in_evaluations_and_no_repeats(name):
    r = Replay("matmul_tiles")
    out = run(r, budget_evals=20, budget_s=1e9, strategy=name, seed=3)
    assert out.stopped == "budget_evals" and len(out.evaluated) == 20
    assert len({key(c) for c in r.calls}) == 20


def test_budget_in_seconds_stops_before_starting_another():
    r = Replay("matmul_tiles")
    out = run(r, budget_evals=64, budget_s=5.0, strategy="random", seed=1)
    assert out.stopped == "budget_s"
    spent = sum(r.times[key(t.config)] for t in out.trials) / 1e3
    last = r.times[key(out.trials[-1].config)] / 1e3
    assert spent - last < 5.0 <= spent


def test_model_based_beats_random_on_the_matmul_cache():
    optuna_ranks, random_ranks = [], []
    for seed in range(5):
        for name, ranks in (("optuna", optuna_ranks), ("random", random_ranks)):
            r = Replay("matmul_tiles")
            out = run(r, budget_evals=16, budget_s=1e9, strategy=name, seed=seed)
            ranks.append(r.rank(out.best.score))
    assert statistics.median(optuna_ranks) <= statistics.median(random_ranks)
    assert max(optuna_ranks) < 8  # within the best eighth of 64 configs, every seed


def test_warm_start_goes_first_and_invalid_configs_are_pruned_unrun():
    r = Replay("matmul_tiles")
    r.space.rule = lambda c: "BLOCK_K over BLOCK_M" if c["BLOCK_K"] > c["BLOCK_M"] else None
    warm = [
        {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 16},
        {"BLOCK_M": 7, "BLOCK_N": 1, "BLOCK_K": 1},
    ]
    out = run(r, budget_evals=64, budget_s=1e9, strategy="exhaustive", warm=warm)
    assert r.calls[0] == warm[0]  # the point outside the space is dropped
    pruned = [t for t in out.trials if t.status == "pruned"]
    assert len(pruned) == 24 and all(t.config["BLOCK_K"] > t.config["BLOCK_M"] for t in pruned)
    assert all(c["BLOCK_K"] <= c["BLOCK_M"] for c in r.calls) and len(r.calls) == 40


def test_auto_picks_by_space_size_and_falls_back_without_optuna(monkeypatch):
    space = Replay("matmul_tiles").space
    assert strategies.choose("auto", space, 64) is strategies.Exhaustive
    assert strategies.choose("auto", space, 10) is strategies.ModelBased
    monkeypatch.setitem(sys.modules, "optuna", None)
    assert strategies.choose("auto", space, 10) is strategies.RandomSearch
    with pytest.raises(ValueError, match="unknown strategy"):
        strategies.choose("annealing", space, 10)


def test_space_rejects_bad_definitions():
    with pytest.raises(ValueError, match="no values"):
        Param("x", ())
    with pytest.raises(ValueError, match="repeats"):
        Param("x", (1, 1))
    with pytest.raises(ValueError, match="repeat"):
        Space([Param("x", (1,)), Param("x", (2,))])
    s = Space([Param("a", (1, 2, 3)), Param("b", (None, "x"))])
    assert s.size == 6 and s.neighbours({"a": 2, "b": None}) == [
        {"a": 1, "b": None},
        {"a": 3, "b": None},
        {"a": 2, "b": "x"},
    ]


def test_history_keeps_each_configs_best_and_survives_damage(tmp_path):
    h = History(tmp_path)
    h.record("ab" * 32, "sm_90", "triton", [({"B": 1}, 3.0), ({"B": 2}, None), ({"B": 4}, 1.0)])
    h.record("ab" * 32, "sm_90", "triton", [({"B": 1}, 0.5), ({"B": 4}, 2.0)])
    assert h.best("ab" * 32, "sm_90", "triton") == [{"B": 1}, {"B": 4}]
    assert h.best("ab" * 32, "gfx942", "triton") == []  # another device learns nothing from it
    assert h.best("cd" * 32, "sm_90", "triton") == []
    h.path("ab" * 32, "sm_90", "triton").write_text("{not json")
    assert h.best("ab" * 32, "sm_90", "triton") == []


@pytest.mark.parametrize("name", ["exhaustive", "random", "optuna"])
def test_asked_ahead_configs_are_the_ones_asked_next_whatever_is_told(name):
    space = Space([Param("BLOCK", (64, 128, 256, 512, 1024)), Param("WARPS", (2, 4, 8))])
    warm = [{"BLOCK": 256, "WARPS": 4}]
    plain = strategies.STRATEGIES[name](space, warm=warm, seed=3)
    told = []
    for _ in range(4):  # the same strategy, asked one at a time and told a score each time
        c = plain.ask()
        plain.tell(c, 1.0)
        told.append(c)
    ahead = strategies.STRATEGIES[name](space, warm=warm, seed=3)
    known = ahead.ahead(4)
    assert known[0] == warm[0] and len({key(c) for c in known}) == len(known)
    asked = []
    for i in range(len(known)):
        c = ahead.ask()
        ahead.tell(c, float(i))  # other scores than `plain` got: nothing asked ahead changes
        asked.append(c)
    assert asked == known == told[: len(known)]
    assert len(known) == 4  # random start-up trials for the model: none depends on a score
    follow = ahead.ask()
    assert follow is not None and key(follow) not in {key(c) for c in known}


def test_the_model_asks_ahead_no_further_than_its_start_up_trials():
    space = Space([Param("X", tuple(range(100))), Param("Y", tuple(range(10)))])
    model = strategies.ModelBased(space, seed=0)
    assert len(model.ahead(50)) == model._startup == 10  # past them TPE needs the scores


def test_prepare_gets_the_configs_the_search_then_evaluates_in_order():
    r = Replay("softmax_block")
    prepared = []
    out = run(r, budget_evals=5, budget_s=1e9, strategy="random", prepare=prepared.extend)
    assert prepared == r.calls == [t.config for t in out.evaluated]
    r = Replay("softmax_block")
    prepared = []
    run(r, budget_evals=20, budget_s=1e9, strategy="exhaustive", prepare=prepared.extend)
    assert prepared == r.calls and len(prepared) == 11
