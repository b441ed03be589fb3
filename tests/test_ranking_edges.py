"""Ranking edge cases on a real frozen baseline (its own measured spreads): nothing beats the
baseline, the fastest was flagged, a tie within the noise."""

import statistics

from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from kernel_bakeoff.tasks.check.standing import baseline_stats
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult, DiscoverPlan
from kernel_bakeoff.tasks.models.run import DiscoverOutcome, LaneResult, Review
from kernel_bakeoff.tasks.report.ranking import rank

REL = 0.01  # each candidate's own relative spread


def result(task, name, speedup):
    medians, _ = baseline_stats(task)
    wls = []
    for w, base in medians.items():
        ms = base / speedup
        t = Timing(
            clock="host",
            sample_count=30,
            median_ms=ms,
            min_ms=ms,
            max_ms=ms,
            spread_ms=REL * ms,
            samples_ms=[ms] * 30,
        )
        wls.append(
            WorkloadVerdict(
                workload=w, status=Status.PASSED, timing=t, baseline_ms=base, speedup=speedup
            )
        )
    v = Verdict(
        candidate=name,
        oracle_sha256="o",
        device="cpu",
        status=Status.PASSED,
        workloads=wls,
        speedup=speedup,
    )
    ref = CandidateRef(name=name, language="torch", mode="optimize", path=f"/c/{name}")
    return CandidateResult(candidate=ref, verdict=v)


def lane(results, review):
    return LaneResult(
        key="torch",
        language="torch",
        mode="optimize",
        status="completed",
        cache_key="k",
        candidates=results,
        review=review,
    )


def bar(task) -> float:
    """What a candidate must beat: 1 + its spread + the baseline's, averaged over workloads."""
    _, spreads = baseline_stats(task)
    return 1 + statistics.fmean(REL + s for s in spreads.values())


def test_nothing_beats_the_baseline(frozen_rmsnorm):
    slow = [result(frozen_rmsnorm, "slower", 0.8), result(frozen_rmsnorm, "same", 1.0)]
    review = Review(candidate="same", decision="accepted", reasons=["ok"])
    rows, winner = rank([lane(slow, review)], None, frozen_rmsnorm)
    assert winner is None
    assert {r.name: r.status for r in rows} == {"same": "within-spread", "slower": "passed"}


def test_the_fastest_was_flagged_and_the_next_wins(frozen_rmsnorm):
    need = bar(frozen_rmsnorm)
    fast = result(frozen_rmsnorm, "too-good", 3 * need)
    good = result(frozen_rmsnorm, "good", 1.5 * need)
    review = Review(
        candidate="good",
        decision="accepted",
        reasons=["ok"],
        flagged={"too-good": ["timing spread over 25%"]},
    )
    rows, winner = rank([lane([fast, good], review)], None, frozen_rmsnorm)
    # the winner's figure stands; the faster doubted one follows, its reason in the row
    assert [r.name for r in rows] == ["good", "too-good"]
    assert rows[1].status == "flagged" and "timing spread" in rows[1].detail
    assert winner is not None and winner.name == "good" and winner.status == "winner"


def test_a_tie_within_noise_keeps_the_original(frozen_rmsnorm):
    need = bar(frozen_rmsnorm)
    tie = result(frozen_rmsnorm, "tie", 1 + (need - 1) * 0.9)  # faster, but inside the spread
    review = Review(candidate="tie", decision="accepted", reasons=["ok"])
    rows, winner = rank([lane([tie], review)], None, frozen_rmsnorm)
    assert winner is None and rows[0].status == "within-spread"
    assert f"{need:.3f}x" in rows[0].detail
    just = result(frozen_rmsnorm, "just", need * 1.02)  # the same, just beyond it: wins
    review = Review(candidate="just", decision="accepted", reasons=["ok"])
    _, winner = rank([lane([just], review)], None, frozen_rmsnorm)
    assert winner is not None and winner.name == "just"


def test_a_candidate_proposed_by_discover_and_a_lane_is_one_row(frozen_rmsnorm):
    """The lane proposed what Discover had checked (same files, so one check and one verdict,
    tasks/check/evaluate.py): one row, from the lane that accepted it, naming Discover too."""
    need = bar(frozen_rmsnorm)
    shared = result(frozen_rmsnorm, "compiled", 2 * need)
    own = result(frozen_rmsnorm, "tuned", 1.5 * need)
    at_lane = CandidateResult(  # the lane's copy of the files: its own path, the same verdict
        candidate=shared.candidate.model_copy(update={"path": "/lane/compiled"}),
        verdict=shared.verdict,
    )
    plan = DiscoverPlan(baseline_ms=baseline_stats(frozen_rmsnorm)[0], measured=[shared])
    found = DiscoverOutcome(
        plan=plan, review=Review(candidate="compiled", decision="accepted", reasons=["ok"])
    )
    review = Review(candidate="compiled", decision="accepted", reasons=["ok"])
    rows, winner = rank([lane([own, at_lane], review)], found, frozen_rmsnorm)
    assert [(r.name, r.source, r.also_from) for r in rows] == [
        ("compiled", "torch", ["discover"]),
        ("tuned", "torch", []),
    ]
    assert winner is rows[0] and winner.path == "/lane/compiled"
    assert winner.origin() == "torch, discover"
    # checked twice (a re-check: other samples), it is two candidates, two rows
    again = result(frozen_rmsnorm, "compiled", 2.01 * need)
    plan = DiscoverPlan(baseline_ms=plan.baseline_ms, measured=[again])
    rows, _ = rank([lane([own, at_lane], review)], DiscoverOutcome(plan=plan), frozen_rmsnorm)
    assert sorted((r.name, r.source) for r in rows) == [
        ("compiled", "discover"),
        ("compiled", "torch"),
        ("tuned", "torch"),
    ]
