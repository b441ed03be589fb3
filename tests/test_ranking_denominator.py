"""One denominator: every speedup in the ranking is the frozen baseline's median over the
candidate's, whatever baseline the candidate's own check timed beside it. The verdicts here are
written by the test (no clock is read), modelled on a run where in-check baselines ran from 5.46
to 16.47 ms against a frozen 5.712 ms and the fastest median ranked last."""

import itertools
import json

import pytest

from kernel_bakeoff.scripts.baseline import BaselineWorkload
from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from kernel_bakeoff.scripts.verify import drift, drifted
from kernel_bakeoff.tasks.check.standing import timing_doubts
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from kernel_bakeoff.tasks.models.run import LaneResult, Review
from kernel_bakeoff.tasks.report.ranking import rank

FROZEN_MS = 5.712
FROZEN_SAMPLES = [5.70, 5.71, 5.712, 5.72, 5.73]


@pytest.fixture
def task(tmp_path):
    """The two files the ranking reads of a frozen task: the spec's workloads and baseline.json."""
    spec = {"name": "op", "entry": "kernel.py:op", "language": "torch",
            "workloads": [{"name": "w", "timed": True}]}  # fmt: skip
    base = {"device": "cpu", "workloads": {"w": {"median_ms": FROZEN_MS, "spread_ms": 0.02,
                                                 "samples_ms": FROZEN_SAMPLES}}}  # fmt: skip
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "baseline.json").write_text(json.dumps(base))
    return tmp_path


def timing(ms: float, rel: float = 0.005) -> Timing:
    samples = [ms * (1 - rel), ms, ms * (1 + rel)]
    return Timing(clock="cuda_event", sample_count=30, median_ms=ms, min_ms=min(samples),
                  max_ms=max(samples), spread_ms=rel * ms, samples_ms=samples)  # fmt: skip


def result(name: str, median: float, beside: float, drifted_by: str | None = None):
    """A passed candidate whose check timed the baseline at `beside` ms, and whose verdict
    divided by that (as the judge once did): the ranking must not take that figure."""
    w = WorkloadVerdict(
        workload="w",
        status=Status.PASSED,
        timing=timing(median),
        baseline_ms=beside,
        speedup=beside / median,
        baseline_timing=timing(beside),
        frozen_baseline_ms=FROZEN_MS,
        drift=drifted_by,
    )
    v = Verdict(candidate=name, oracle_sha256="o", device="NVIDIA H200 (sm_90)",
                status=Status.PASSED, workloads=[w], speedup=beside / median)  # fmt: skip
    ref = CandidateRef(name=name, language="torch", mode="optimize", path=f"/c/{name}")
    return CandidateResult(candidate=ref, verdict=v)


def lane(results, review=None):
    return LaneResult(key="torch", language="torch", mode="optimize", status="completed",
                      cache_key="k", candidates=results, review=review)  # fmt: skip


# (name, median ms, the baseline timed beside it in its check)
MEASURED = [("max-autotune-cd", 3.261, 5.46), ("default", 3.30, 7.9), ("cudagraphs", 3.317, 16.47)]


def test_speedups_are_over_the_frozen_baseline_and_a_faster_median_ranks_higher(task):
    rows, _ = rank([lane([result(*m) for m in reversed(MEASURED)])], None, task)
    assert [r.name for r in rows] == ["max-autotune-cd", "default", "cudagraphs"]
    for r, (_, median, _) in zip(rows, MEASURED, strict=True):
        assert r.median_ms == {"w": median}
        # anyone can divide the two figures of the row and get its speedup
        assert r.speedups["w"] == pytest.approx(FROZEN_MS / median)
        assert r.speedup == pytest.approx(FROZEN_MS / median)
    assert rows[2].baseline_beside_ms == {"w": 16.47}  # kept beside, never divided by
    assert max(r.speedup for r in rows) < 1.76  # not the 4.97x of 16.47 / 3.317


@pytest.mark.parametrize("flagged", [(), ("a",), ("b", "c"), ("a", "c", "d")])
def test_a_faster_median_never_ranks_below_a_slower_one_of_the_same_status(task, flagged):
    medians = {"a": 2.0, "b": 2.5, "c": 3.0, "d": 4.0}
    besides = {"a": 4.0, "b": 12.0, "c": 9.0, "d": 30.0}  # denominators that would reorder them
    found = [result(n, medians[n], besides[n]) for n in medians]
    review = Review(candidate=None, decision="nothing-to-review",
                    flagged={n: [f"{n} doubted"] for n in flagged})  # fmt: skip
    rows, _ = rank([lane(found, review)], None, task)
    for x, y in itertools.combinations(rows, 2):  # x ranks above y
        if x.status == y.status:
            assert x.median_ms["w"] < y.median_ms["w"], [(r.name, r.status) for r in rows]
    for r in rows:
        if r.status == "flagged":
            assert r.detail == f"{r.name} doubted"  # the reason is in the row
    # figures that stand rank above doubted ones, each group fastest first
    assert [r.status == "flagged" for r in rows] == sorted(r.status == "flagged" for r in rows)


def test_a_drifted_baseline_beside_the_candidate_flags_it_and_inflates_nothing(task):
    said = drift(timing(16.47, rel=0.05), BaselineWorkload(median_ms=FROZEN_MS, spread_ms=0.02))
    assert said and "drifted" in said and "16.47 ms" in said and "5.712 ms" in said
    moved = result("cudagraphs", 3.317, 16.47, drifted_by=said)
    steady = result("default", 3.30, 5.70)
    review = Review(candidate="cudagraphs", decision="accepted", reasons=["ok"])
    rows, winner = rank([lane([moved, steady], review)], None, task)
    row = next(r for r in rows if r.name == "cudagraphs")
    assert row.status == "flagged" and "drifted" in row.detail and "workload w" in row.detail
    assert row.speedup == pytest.approx(FROZEN_MS / 3.317)  # 1.72x, not 16.47 / 3.317
    # the accepted one was timed on a moved machine: the next of its lane whose figure stands
    # and beats the spread wins in its place, and ranks first
    assert winner is rows[0] and winner.name == "default"
    assert "cudagraphs, the reviewed one, was flagged" in winner.detail
    alone, _ = rank([lane([moved], review)], None, task)
    assert alone[0].status == "flagged" and not any(r.status == "winner" for r in alone)


def _gpu_task(task_dir, median_ms: float) -> None:
    """A frozen task of one timed workload on a device, its baseline's spread a few hundredths
    of a per cent of `median_ms` (as on the H100)."""
    spec = {"name": "op", "entry": "kernel.py:op", "language": "torch",
            "workloads": [{"name": "w", "timed": True}]}  # fmt: skip
    samples = [median_ms - 0.001, median_ms, median_ms + 0.001]
    base = {"device": "cuda", "workloads": {"w": {"median_ms": median_ms, "spread_ms": 0.001,
                                                  "samples_ms": samples}}}  # fmt: skip
    (task_dir / "spec.json").write_text(json.dumps(spec))
    (task_dir / "baseline.json").write_text(json.dumps(base))


def test_a_win_beyond_the_baselines_move_stands_and_one_within_it_does_not(tmp_path):
    """The H100 case (2026-12-06): spreads of a few hundredths of a per cent, the baseline
    beside 0.7% over its frozen figure, a template at 1.31x: flagged for the move until the
    rule asked whether the move could account for the win."""
    _gpu_task(tmp_path, 2.709)
    frozen = BaselineWorkload(median_ms=2.709, spread_ms=0.001)
    said = drift(timing(2.729, rel=0.0005), frozen)
    assert said and "1.007x" in said  # a move beyond both spreads, and said

    def moved(name, median):
        r = result(name, median, 2.729, drifted_by=said)
        w = r.verdict.workloads[0]
        w.baseline_ms, w.frozen_baseline_ms, w.timing = 2.709, 2.709, timing(median, rel=0.0005)
        return r

    far, near = moved("template", 2.06), moved("compile", 2.69)
    review = Review(candidate="template", decision="accepted", reasons=["ok"])
    rows, winner = rank([lane([far, near], review)], None, tmp_path)
    assert winner is not None and winner.name == "template"
    assert winner.speedup == pytest.approx(2.709 / 2.06)
    row = next(r for r in rows if r.name == "compile")
    assert row.status == "flagged" and "drifted" in row.detail  # 1.007x: the move could be it


def test_drift_needs_a_move_beyond_both_spreads():
    frozen = BaselineWorkload(median_ms=1.0, spread_ms=0.1)
    assert drift(timing(1.05, rel=0.02), frozen) is None  # within the frozen spread
    assert drift(timing(1.5, rel=0.5), frozen) is None  # within its own wide spread
    assert drift(timing(1.5, rel=0.02), frozen) is not None
    assert drift(timing(0.5, rel=0.02), frozen) is not None  # faster counts too
    assert drifted([1.49, 1.5, 1.51], frozen) and not drifted([0.99, 1.0, 1.01], frozen)
    assert not drifted([], frozen) and not drifted([9.0], None)  # nothing to compare


def test_a_noisy_frozen_baseline_is_said_in_one_line_and_in_the_report(task):
    from kernel_bakeoff.tasks.check.standing import noisy_baseline
    from kernel_bakeoff.tasks.models.run import Report
    from kernel_bakeoff.tasks.report.ranking import measurement
    from kernel_bakeoff.tasks.report.render import render

    assert noisy_baseline(task) is None  # a spread well under 25%
    base = json.loads((task / "baseline.json").read_text())
    base["workloads"]["w"]["samples_ms"] = [1.0, 2.0, FROZEN_MS, 20.0, 30.0]
    (task / "baseline.json").write_text(json.dumps(base))
    (task / "fingerprint.json").write_text(json.dumps({"device": "cpu", "arch": "cpu"}))
    line = noisy_baseline(task)
    assert line.startswith("the machine was busy: the frozen baseline's spread is ")
    assert "% of its median (workload w; a candidate's may be 25% at most)" in line
    assert line.endswith("re-freeze on a quiet machine") and "\n" not in line
    report = Report(kernel_path="k", kernel="k", mode="optimize", run_dir="r", task_dir=str(task),
                    oracle_sha256="0" * 64, baseline_ms={"w": FROZEN_MS}, rows=[],
                    measurement=measurement(task))  # fmt: skip
    text = render("report.md.j2", report=report)
    assert text.count(line) == 1 and f"- **Noisy baseline**: {line}" in text


def test_a_win_the_host_cannot_keep_up_with_is_flagged_and_one_it_can_stands(tmp_path):
    """The H100 fp32 GEMM (2026-12-06): FlagGems ran 2.085 ms on the device against cuBLAS's
    2.649, but its host took 3.84 ms to queue each call: in a caller's loop, 0.69x."""
    _gpu_task(tmp_path, 2.649)

    def checked(name, median, host):
        r = result(name, median, 2.649)
        w = r.verdict.workloads[0]
        w.baseline_ms, w.frozen_baseline_ms = 2.649, 2.649
        w.timing = timing(median, rel=0.0005).model_copy(update={"host_call_ms": host})
        w.baseline_timing = timing(2.649, rel=0.0005).model_copy(update={"host_call_ms": 0.157})
        return r

    paced = checked("flag-gems", 2.085, 3.84)
    kept_up = checked("template", 2.30, 0.41)
    # the reviewer and the ranking read one rule (tasks/check/standing.py)
    assert any("host-bound" in why for why in timing_doubts(paced)), timing_doubts(paced)
    assert timing_doubts(kept_up) == []
    review = Review(candidate="flag-gems", decision="accepted", reasons=["ok"])
    rows, winner = rank([lane([paced, kept_up], review)], None, tmp_path)
    row = next(r for r in rows if r.name == "flag-gems")
    assert row.status == "flagged" and "host-bound" in row.detail and "0.690x" in row.detail
    assert row.speedup == pytest.approx(2.649 / 2.085)  # the device figure stays in the row
    assert winner is not None and winner.name == "template"  # the next of the lane, promoted
    # a host that paces the loop but still beats the baseline's own loop: the win stands
    fast = checked("fast", 0.5, 1.0)
    rows, winner = rank([lane([fast], Review(candidate="fast", decision="accepted",
                                              reasons=["ok"]))], None, tmp_path)  # fmt: skip
    assert winner is not None and winner.name == "fast"
