"""report.html's figures from a report the test writes (no clock read, no browser): for a
one-workload run the overall chart and the workload's chart hold the same bars, error bars and
bars to beat, even where a candidate's own check timed a wildly different baseline; the
roofline keeps decimals on its ticks and gives each candidate one colour, its legend's."""

import json

import pytest

from kernel_bakeoff.scripts.spec import InputSpec, OpSpec, Workload
from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from kernel_bakeoff.tasks.check.roofline import DeviceRates
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from kernel_bakeoff.tasks.models.run import LaneResult, Report, Review
from kernel_bakeoff.tasks.report import html as report_html
from kernel_bakeoff.tasks.report.ranking import rank
from tests.task_doubles import unverified

FROZEN_MS = 5.712


@pytest.fixture
def one_workload_task(tmp_path):
    spec = OpSpec(
        name="rmsnorm", language="torch", entry="kernel.py:rmsnorm", flops="4*T*H",
        inputs=[InputSpec(name="x", shape=["T", "H"])],
        workloads=[Workload(name="tokens_1k", dims={"T": 1024, "H": 512})],
    )  # fmt: skip
    samples = [5.0, 5.5, FROZEN_MS, 5.9, 6.4]
    base = {"device": "cuda", "workloads": {"tokens_1k": {
        "median_ms": FROZEN_MS, "spread_ms": 0.9, "samples_ms": samples, "clock": "cuda_event"}}}  # fmt: skip
    (tmp_path / "spec.json").write_text(spec.model_dump_json())
    (tmp_path / "baseline.json").write_text(json.dumps(base))
    (tmp_path / "fingerprint.json").write_text(json.dumps({"device": "cuda", "arch": "sm_90"}))
    return tmp_path


def timing(ms, rel):
    return Timing(clock="cuda_event", sample_count=30, median_ms=ms, min_ms=ms * (1 - rel),
                  max_ms=ms * (1 + rel), spread_ms=ms * rel, samples_ms=[ms] * 30)  # fmt: skip


def result(name, ms, beside_ms, beside_rel, rel=0.02):
    """Passed, with the baseline timed beside it at `beside_ms` and a spread of `beside_rel`:
    the old overall error bar took that spread, the workload's chart the frozen one."""
    w = WorkloadVerdict(workload="tokens_1k", status=Status.PASSED, timing=timing(ms, rel),
                        baseline_ms=FROZEN_MS, speedup=FROZEN_MS / ms, frozen_baseline_ms=FROZEN_MS,
                        baseline_timing=timing(beside_ms, beside_rel))  # fmt: skip
    v = Verdict(candidate=name, oracle_sha256="o", device="NVIDIA H200 (sm_90)",
                status=Status.PASSED, workloads=[w], speedup=FROZEN_MS / ms)  # fmt: skip
    return CandidateResult(
        candidate=CandidateRef(name=name, language="torch", mode="optimize", path=f"/c/{name}"),
        verdict=v,
    )


def report_of(task) -> Report:
    found = [
        result("cudagraphs", 2.166, 16.47, 1.09),  # the winner whose in-check baseline was 109%
        result("default", 3.30, 5.46, 0.03),
        result("same-time", 3.30, 5.50, 0.03),  # the same median: its dot must not hide
    ]
    review = Review(candidate="cudagraphs", decision="accepted", reasons=["ok"])
    lanes = [
        LaneResult(key="torch", language="torch", mode="optimize", status="completed",
                   cache_key="k", candidates=found, review=review),
        LaneResult(key="tilelang", language="tilelang", mode="author", status="skipped",
                   reason="no model configured; set ANTHROPIC_API_KEY", cache_key="k"),
    ]  # fmt: skip
    rows, winner = rank(lanes, None, task)
    return Report(kernel_path="k", kernel="rmsnorm", mode="bakeoff", run_dir=str(task),
                  task_dir=str(task), oracle_sha256="0" * 64,
                  baseline_ms={"tokens_1k": FROZEN_MS}, rows=rows, winner=winner, lanes=lanes)  # fmt: skip


RATES = DeviceRates(arch="sm_90", bandwidth=4.22e12, peak_flops=5e13, source="measured", note="")


def test_a_one_workload_run_draws_the_same_numbers_in_both_charts(one_workload_task):
    report = report_of(one_workload_task)
    assert report.winner is not None and report.winner.name == "cudagraphs"
    _, figures = report_html.build(report, rates=RATES, task=unverified(one_workload_task))
    overall, each = figures["speedup-overall"], figures["speedup-tokens_1k"]
    for k in range(2):  # the bars and the ticks to beat
        assert overall["data"][k]["x"] == each["data"][k]["x"]
        assert overall["data"][k]["y"] == pytest.approx(each["data"][k]["y"])
    bars_o, bars_w = overall["data"][0]["error_y"], each["data"][0]["error_y"]
    assert bars_o["array"] == pytest.approx(bars_w["array"])
    assert bars_o["arrayminus"] == pytest.approx(bars_w["arrayminus"])
    # over the frozen 5.712 ms, with its spread: not 16.47 ms with 109%
    x = FROZEN_MS / 2.166
    i = overall["data"][0]["x"].index(report_html.label(report.winner))
    assert overall["data"][0]["y"][i] == pytest.approx(x)
    assert overall["data"][0]["error_y"]["array"][i] < x  # the error bar does not run to zero


def test_the_roofline_keeps_decimals_and_one_colour_per_candidate(one_workload_task):
    report = report_of(one_workload_task)
    page, figures = report_html.build(report, rates=RATES, task=unverified(one_workload_task))
    roof = figures["roofline"]
    assert roof["layout"]["yaxis"]["tickformat"] == ".4~g"  # 0.02 ms, not "2"
    assert roof["layout"]["scattermode"] == "group"  # equal times sit side by side
    traces = [t for t in roof["data"] if t["name"].startswith(tuple("0123456789"))]
    assert len(traces) == len(report.rows)
    for t in traces:  # the legend shows a trace's one colour: the colour of its dots
        assert isinstance(t["marker"]["color"], str)
        status = t["name"].rsplit("(", 1)[1].rstrip(")")
        assert t["marker"]["color"] == report_html.COLORS.get(status, "#cccccc")
    # the candidates table comes before the charts, and the skipped lane is shown as skipped
    assert page.index('id="candidates"') < page.index('id="speedup-overall"')
    assert '<tr class="lane-skipped"><td>tilelang</td>' in page
    assert "skipped: no model configured" in page
