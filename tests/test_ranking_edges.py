"""Ranking edge cases on a real frozen baseline (its own measured spreads): nothing beats the
baseline, the fastest was flagged, a tie within the noise."""

import statistics

from scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from tasks.models import CandidateRef, CandidateResult
from tasks.ranking import baseline_stats, rank
from tasks.results import LaneResult, Review

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
    assert [r.name for r in rows] == ["too-good", "good"]  # still listed first, by speed
    assert rows[0].status == "flagged" and "timing spread" in rows[0].detail
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
