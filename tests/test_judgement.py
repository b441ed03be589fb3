"""One judgement (tasks/check/judgement.py): the reviewers, the ranking, the search and Discover
decide whether a candidate counts, and which is faster, by the same functions. The verdicts
here are written by the test (no clock is read); each test fails if a reader decides apart."""

import json
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict, geomean
from kernel_bakeoff.tasks.agents import review as model_review
from kernel_bakeoff.tasks.agents import without_model
from kernel_bakeoff.tasks.check import judgement
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from kernel_bakeoff.tasks.models.run import LaneResult, Standing
from kernel_bakeoff.tasks.report import ranking
from kernel_bakeoff.tasks.report.ranking import rank
from kernel_bakeoff.tasks.search.runner import tune
from kernel_bakeoff.tasks.search.score import geomean_ms
from kernel_bakeoff.tasks.search.space import Param, Space, key
from tests.conftest import ROOT

FROZEN = {"small": 0.8, "large": 5.0}  # the frozen baseline's medians, ms


@pytest.fixture
def task(tmp_path):
    """The two files the ranking reads of a frozen task: two timed workloads, a quiet baseline."""
    spec = {"name": "op", "entry": "kernel.py:op", "language": "torch",
            "workloads": [{"name": n, "timed": True} for n in FROZEN]}  # fmt: skip
    base = {"device": "cpu", "workloads": {n: {"median_ms": ms, "spread_ms": ms * 0.002,
            "samples_ms": [ms * 0.998, ms, ms * 1.002]} for n, ms in FROZEN.items()}}  # fmt: skip
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "baseline.json").write_text(json.dumps(base))
    return tmp_path


def timing(ms: float, rel: float = 0.002) -> Timing:
    samples = [ms * (1 - rel), ms, ms * (1 + rel)]
    return Timing(clock="host", sample_count=30, median_ms=ms, min_ms=min(samples),
                  max_ms=max(samples), spread_ms=rel * ms, samples_ms=samples)  # fmt: skip


def checked(name: str, ms: dict[str, float] | None) -> CandidateResult:
    """A candidate's verdict as the judge writes it: per-workload ratios to the frozen medians
    and their geometric mean; `ms` None: it gave wrong answers."""
    ref = CandidateRef(name=name, language="torch", mode="optimize", path=f"/c/{name}")
    if ms is None:
        wrong = [WorkloadVerdict(workload=n, status=Status.INCORRECT_NUMERICAL, reason="off")
                 for n in FROZEN]  # fmt: skip
        v = Verdict(candidate=name, oracle_sha256="o", device="cpu",
                    status=Status.INCORRECT_NUMERICAL, reason="off", workloads=wrong)  # fmt: skip
        return CandidateResult(candidate=ref, verdict=v)
    wls = [
        WorkloadVerdict(
            workload=n,
            status=Status.PASSED,
            timing=timing(ms[n]),
            baseline_ms=FROZEN[n],
            frozen_baseline_ms=FROZEN[n],
            speedup=FROZEN[n] / ms[n],
        )  # fmt: skip
        for n in FROZEN
    ]
    v = Verdict(candidate=name, oracle_sha256="o", device="cpu", status=Status.PASSED,
                workloads=wls, speedup=geomean([w.speedup for w in wls]))  # fmt: skip
    return CandidateResult(candidate=ref, verdict=v)


def lane(results, review):
    return LaneResult(key="torch", language="torch", mode="optimize", status="completed",
                      cache_key="k", candidates=results, review=review)  # fmt: skip


def measured(seed: int, n: int = 12) -> list[CandidateResult]:
    """`n` candidates whose two workloads move apart (one faster on small, another on large),
    so that an order by one workload, or by the arithmetic mean, differs from the geomean's."""
    draw = random.Random(seed)
    found = [
        checked(f"c{i}", {w: ms * draw.uniform(0.3, 1.6) for w, ms in FROZEN.items()})
        for i in range(n)
    ]
    return found + [checked("wrong", None)]


@pytest.mark.parametrize("seed", range(5))
def test_the_search_orders_as_the_report_and_as_the_geomean_of_ms(task, seed):
    found = measured(seed)
    draw = random.Random(seed)
    draw.shuffle(found)
    by_ms = sorted(found, key=lambda r: (geomean_ms(r.verdict) is None, geomean_ms(r.verdict) or 0))
    searched = judgement.by_speed(found)  # the search lane's results, and Discover's pick
    assert [r.candidate.name for r in searched] == [r.candidate.name for r in by_ms]
    assert searched[-1].candidate.name == "wrong"  # failures last
    review = without_model.review(SimpleNamespace(inputs=SimpleNamespace(candidates=found)))
    assert review.candidate == searched[0].candidate.name  # the reviewer takes the fastest
    rows, _ = rank([lane(found, review)], None, task)
    assert [r.name for r in rows] == [r.candidate.name for r in searched]


def test_the_optimizers_cost_is_the_geomean_of_ms_over_a_constant():
    # so a strategy sees the same order and the same ratios it saw when it was given ms
    found = [r for r in measured(7) if r.verdict.passed]
    frozen = geomean(list(FROZEN.values()))
    for r in found:
        assert judgement.cost(r.verdict) == pytest.approx(geomean_ms(r.verdict) / frozen)
        assert judgement.speed(r.verdict) == r.verdict.speedup
    assert judgement.cost(checked("wrong", None).verdict) is None


@pytest.mark.parametrize("strategy", ["exhaustive", "random", "optuna"])
def test_a_search_given_the_cost_tries_what_it_tried_given_ms(strategy):
    """The recorded matmul cache (tests/data), replayed twice: once scored in ms as the search
    was, once by the cost it minimizes now. The same configs are tried in the same order."""
    data = json.loads((ROOT / "tests" / "data" / "cache_matmul_tiles.json").read_text())
    times = {key(e["config"]): e["time_ms"] for e in data["entries"]}
    names = list(data["entries"][0]["config"])
    values = {n: tuple(dict.fromkeys(e["config"][n] for e in data["entries"])) for n in names}
    space = Space([Param(n, values[n]) for n in names])

    def replay(measure):
        def evaluate(config):
            ms = times[key(config)]
            ok = ms is not None
            status = Status.PASSED if ok else Status.INCORRECT_NUMERICAL
            w = WorkloadVerdict(
                workload="large",
                status=status,
                reason=None if ok else "off",
                timing=timing(ms) if ok else None,
                baseline_ms=5.0,
                speedup=5.0 / ms if ok else None,
            )
            v = Verdict(
                candidate="c",
                oracle_sha256="o",
                device="cpu",
                status=status,
                reason=w.reason,
                workloads=[w],
                speedup=w.speedup,
            )
            return measure(v), "", None

        out = tune(space, evaluate, budget_evals=20, budget_s=1e9, strategy=strategy, seed=3)
        return [t.config for t in out.trials], out.best.config

    assert replay(geomean_ms) == replay(judgement.cost)


def test_the_reviewers_and_the_ranking_doubt_through_one_function(task, monkeypatch):
    """A doubt the judgement raises reaches the reviewer without a model, a model reviewer's
    floor, the ranking's row and its promotion at once: none of them decides apart."""
    fast = checked("fast", {"small": 0.2, "large": 1.0})
    next_ = checked("next", {"small": 0.3, "large": 1.5})
    doubted = {"fast"}
    monkeypatch.setattr(
        judgement, "timing_doubts",
        lambda r: ["doubted by the test"] if r.candidate.name in doubted else [],
    )  # fmt: skip
    request = SimpleNamespace(inputs=SimpleNamespace(candidates=[fast, next_]))
    review = without_model.review(request)
    assert review.decision == "accepted" and review.candidate == "next"
    assert review.flagged == {"fast": ["doubted by the test"]}
    rows, winner = rank([lane([fast, next_], review)], None, task)
    by_name = {r.name: r for r in rows}
    assert by_name["fast"].status is Standing.FLAGGED
    assert by_name["fast"].detail == "doubted by the test"
    assert winner is not None and winner.name == "next"

    # every candidate doubted: a model reviewer's floor flags without asking the model
    doubted.add("next")
    floor = model_review.review(request)
    assert floor == without_model.review(request) and floor.decision == "flagged"

    # promotion asks the same function: a doubted candidate beyond the spread is not promoted
    doubted.discard("fast")
    doubted.discard("next")
    slow = checked("slow", dict(FROZEN))  # accepted, 1.0x: within the spread
    review = without_model.review(SimpleNamespace(inputs=SimpleNamespace(candidates=[slow])))
    _, winner = rank([lane([slow, next_], review)], None, task)
    assert winner is not None and winner.name == "next"
    doubted.add("next")
    _, winner = rank([lane([slow, next_], review)], None, task)
    assert winner is None


def test_ranking_builds_rows_and_the_judgement_decides_them(task, monkeypatch):
    """The ranking takes each row's standing from judgement.standing: a standing changed there
    is the table's."""
    calls = []

    def standing(result, *args, **kwargs):
        calls.append(result.candidate.name)
        return Standing.LANE_FAILED, "decided by the judgement"

    monkeypatch.setattr(judgement, "standing", standing)
    found = measured(1, n=3)
    rows, winner = rank([lane(found, None)], None, task)
    assert sorted(calls) == sorted(r.candidate.name for r in found) and winner is None
    assert {(r.status, r.detail) for r in rows} == {
        (Standing.LANE_FAILED, "decided by the judgement")
    }
    for gone in ("_status", "_promote", "margin", "figures", "interpreted", "Figures"):
        assert not hasattr(ranking, gone), gone  # no second copy of a decision


# Where a reader could decide apart: a module defining a decision, or importing one from a
# rule file instead of the judgement (docs/layering.md, "One judgement", counts the same).
DECIDES = re.compile(
    r"^def (ruled|passed_by_speed|review_candidates|margin|figures|_status|standing|_promote|"
    r"promote|score|speed|cost|by_speed)\(",
    re.M,
)
BESIDE = re.compile(
    r"^from kernel_bakeoff\.tasks\.(check\.(language_rule|standing)|report\.ranking|search\.score) import "
    r".*\b(ruled|review_candidates|passed_by_speed|timing_doubts|margin|score)\b",
    re.M,
)


def _py(*rooms: str) -> list[Path]:
    return [p for room in rooms for p in sorted((ROOT / room).rglob("*.py"))]


def test_the_decisions_live_in_the_judgement_and_its_rule_files():
    where = {
        p.relative_to(ROOT).as_posix()
        for p in _py("tasks/check", "tasks/report", "tasks/search")
        if DECIDES.search(p.read_text())
    }
    assert where == {"tasks/check/judgement.py", "tasks/check/language_rule.py"}
    beside = {
        p.relative_to(ROOT).as_posix()
        for p in _py("tasks", "flows", "benchmarks")
        if BESIDE.search(p.read_text())
    }
    assert beside == {"tasks/check/judgement.py"}  # the judgement composes its rule files


def test_min_samples_is_defined_once():
    defined = [
        p.relative_to(ROOT).as_posix()
        for p in _py("scripts", "tasks", "flows", "benchmarks")
        if re.search(r"^\s*MIN_SAMPLES\s*[:=]", p.read_text(), re.M)
    ]
    assert defined == ["scripts/timing.py"]
