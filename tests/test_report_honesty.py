"""Reports that never mislead: labels by what happened, interpreted against native never
crowned, the baseline's re-measurement never "the best", the bar and the device in the report,
and lane outcomes named for what stopped them."""

import json
from datetime import timedelta

from kernel_bakeoff.flows import phases
from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.models.run import LaneConfig, LaneResult, LaneSpec, Report, Review
from kernel_bakeoff.tasks.report.ranking import rank
from kernel_bakeoff.tasks.report.render import render
from kernel_bakeoff.tasks.run.directory import now
from kernel_bakeoff.tasks.run.lane_status import settle
from tests.task_doubles import unverified

from . import test_flow_plan
from .test_flow_plan import lane, result

task_dir = test_flow_plan.task_dir  # the same fixture: 1 ms per workload, 2% spread


def test_a_slower_accepted_candidate_is_called_slower_and_a_faster_one_within_the_spread(
    task_dir,
):
    slow = result("slow", 0.315)
    rows, winner = rank(
        [lane("torch", [slow], Review(candidate="slow", decision="accepted"))], None, task_dir
    )
    assert (
        winner is None
        and rows[0].status == "slower"
        and "slower than the baseline" in rows[0].detail
    )
    near = result("near", 1.01)
    rows, _ = rank(
        [lane("torch", [near], Review(candidate="near", decision="accepted"))], None, task_dir
    )
    assert (
        rows[0].status == "within-spread"
        and "faster (1.010x) but within the spread" in rows[0].detail
    )


def _interpreted_baseline(task):
    spec = json.loads((task / "spec.json").read_text())
    (task / "spec.json").write_text(json.dumps({**spec, "language": "triton"}))
    base = json.loads((task / "baseline.json").read_text())
    (task / "baseline.json").write_text(json.dumps({**base, "device": "cpu"}))


def test_a_native_candidate_against_an_interpreted_baseline_is_not_comparable(task_dir):
    _interpreted_baseline(task_dir)
    native = result("torch-eager", 2214.684, lang="torch")
    interp = result("triton-tuned", 1.5, lang="triton")
    review = Review(candidate="torch-eager", decision="accepted")
    rows, winner = rank(
        [
            lane("torch", [native], review),
            lane("triton", [interp], Review(candidate="triton-tuned", decision="accepted")),
        ],
        None,
        task_dir,
    )
    by_name = {r.name: r for r in rows}
    assert (
        by_name["torch-eager"].status == "not-comparable" and not by_name["torch-eager"].comparable
    )
    assert winner is not None and winner.name == "triton-tuned"  # interpreted against interpreted
    assert rows[-1].name == "torch-eager"  # a meaningless ratio never heads the table


def _report(rows, winner, task):
    return Report(
        kernel_path="k",
        kernel="k",
        mode="bakeoff",
        run_dir="r",
        task_dir=str(task),
        oracle_sha256="0" * 64,
        baseline_ms={"a": 1.0, "b": 1.0},
        rows=rows,
        winner=winner,
        measurement={
            "fingerprint": {
                "device": "cpu",
                "device_name": "x86_64",
                "arch": "cpu",
                "torch": "2.13.0",
            },
            "clock": "host",
            "interpreted": False,
            "baseline_spread": {"a": 0.01, "b": 0.01},
        },
    )


def test_no_winner_report_names_the_best_candidate_not_the_baseline_and_shows_the_bar(task_dir):
    base = result("baseline", 1.3, mode="baseline")
    cand = result("cand", 0.9)
    rows, winner = rank(
        [lane("torch", [base, cand], Review(candidate="cand", decision="accepted"))], None, task_dir
    )
    text = render("report.md.j2", report=_report(rows, winner, task_dir))
    assert "the fastest candidate measured was cand at 0.900x" in text
    assert "Clock: host" in text and "torch 2.13.0" in text and "| bar |" in text


def test_no_winner_says_the_bar_missed_and_the_faster_flagged_candidate(task_dir):
    """The command's and the flow log's line: a flagged 1.9x beside a bare "no winner" read as
    a contradiction; the line names the bar the best standing figure missed and the flag."""
    near, fast = result("near", 1.004), result("fast", 1.9)
    review = Review(
        candidate="near", decision="accepted", flagged={"fast": ["host-bound: its host paces it"]}
    )
    rows, winner = rank([lane("torch", [near, fast], review)], None, task_dir)
    assert winner is None
    line = phases.winner_line(_report(rows, winner, task_dir))
    assert line.startswith("no winner: the fastest that stands, near, read 1.004x against a bar")
    assert "fast read 1.900x but was flagged: host-bound: its host paces it" in line
    assert line.endswith("the original kernel is kept")
    slower = result("slow", 0.8)
    rows, winner = rank(
        [lane("torch", [slower], Review(candidate="slow", decision="accepted"))], None, task_dir
    )
    line = phases.winner_line(_report(rows, winner, task_dir))
    assert "slow, read 0.800x" in line and "flagged" not in line


def test_not_comparable_rows_are_explained_in_the_report(task_dir):
    _interpreted_baseline(task_dir)
    rows, winner = rank(
        [
            lane(
                "torch", [result("eager", 2214.684)], Review(candidate="eager", decision="accepted")
            )
        ],
        None,
        task_dir,
    )
    text = render("report.md.j2", report=_report(rows, winner, task_dir))
    assert "No winner" in text and "not comparable (2214.684x)" in text and "interpreter" in text


def _config(budget=4, timeout=10.0):
    return LaneConfig(
        run_dir="r",
        task_dir="t",
        oracle_sha256="o",
        lane=LaneSpec(key="torch", language="torch", mode="optimize"),
        budget=budget,
        lane_timeout_s=timeout,
    )


def _ran(n, seconds):
    start = now()
    return LaneResult(
        key="torch",
        language="torch",
        mode="optimize",
        status="failed",
        cache_key="k",
        started=start,
        finished=start + timedelta(seconds=seconds),
        candidates=[result(f"c{i}", 1.0) for i in range(n)],
    )


def test_a_lane_cut_by_its_time_budget_or_without_candidates_is_never_completed():
    cut = _ran(1, 11)
    settle(cut, _config())
    assert (
        cut.status == "cut" and "1 of 4 candidates" in cut.reason and "--lane-timeout" in cut.reason
    )
    empty = _ran(0, 1)
    settle(empty, _config())
    assert empty.status == "failed" and empty.reason == "no candidate was checked"
    full = _ran(4, 11)
    settle(full, _config())
    assert full.status == "completed"
    early = _ran(2, 1)  # the search ran out of configurations, not of time
    settle(early, _config())
    assert early.status == "completed"


def test_phase_lines_leave_the_baseline_out_and_say_a_run_resumed():
    done = _ran(0, 1)
    done.candidates = [
        result("baseline", 1.3, mode="baseline"),
        result("c", 1.1),
        result("bad", 9.0, Status.INCORRECT_NUMERICAL),
    ]
    done.status = "completed"
    assert phases.lane_line(done).endswith("fastest passed c at 1.100x")
    said = phases.resumed_line({"phase": "lanes", "attempt": "abcdef123456"}, "new", ["torch"])
    assert said.startswith("resumed:") and "'lanes'" in said and "torch" in said
    assert phases.resumed_line({"phase": "done", "attempt": "x"}, "new", ["torch"]) is None


def test_a_run_out_of_its_box_says_so_in_its_report(task_dir, tmp_path, monkeypatch):
    """BAKEOFF_ISOLATION=none: the loud line heads the report's warnings (report.md, the HTML
    page, the terminal's list), not only the checks' logs; in the box it is absent."""
    from kernel_bakeoff.flows.report import with_box_warning
    from kernel_bakeoff.scripts import isolation
    from kernel_bakeoff.tasks.report import html as report_html

    monkeypatch.setenv("BAKEOFF_ISOLATION", "none")
    warnings = with_box_warning(["Discover failed"])
    assert warnings == [isolation.WARNING, "Discover failed"]
    assert with_box_warning(warnings) == warnings  # said once
    report = _report([], None, task_dir).model_copy(
        update={"warnings": warnings, "run_dir": str(tmp_path)}
    )
    loud = "untrusted code is NOT in its box (BAKEOFF_ISOLATION=none)"
    assert loud in render("report.md.j2", report=report)
    spec = OpSpec(
        name="rms", kind="norm", language="torch", entry="kernel.py:rmsnorm",
        inputs=[{"name": "x", "shape": ["T", "H"], "dtype": "float32"}],
        workloads=[{"name": n, "dims": {"T": 64, "H": 256}} for n in ("a", "b")],
    )  # fmt: skip
    (task_dir / "spec.json").write_text(spec.model_dump_json())
    (task_dir / "fingerprint.json").write_text(json.dumps(report.measurement["fingerprint"]))
    page, _ = report_html.build(report, None, task=unverified(task_dir))
    assert loud in page
    monkeypatch.setenv("BAKEOFF_ISOLATION", "box")
    assert with_box_warning(["Discover failed"]) == ["Discover failed"]
    boxed = report.model_copy(update={"warnings": with_box_warning([])})
    assert loud not in render("report.md.j2", report=boxed)


def test_an_input_retimed_apart_from_the_frozen_figure_is_said_first(task_dir):
    """The `baseline` row (the input re-timed by Discover) against the frozen figure (1 ms, 2%
    spread): within the spreads nothing is said; 0.88x beyond them, report.md's first line
    after the title says so."""
    from kernel_bakeoff.tasks.report.baseline_agreement import disagreement

    def rows_with(baseline_speedup):
        base = result("input", baseline_speedup, mode="baseline")
        cand = result("cand", 2.0)
        review = Review(candidate="cand", decision="accepted")
        return rank([lane("torch", [base, cand], review)], None, task_dir)

    rows, _ = rows_with(1.01)
    assert disagreement(rows, task_dir) is None
    rows, winner = rows_with(0.88)  # the input timed 1/0.88 = 1.136 ms: 14% slower
    said = disagreement(rows, task_dir)
    assert said and "a 1.136 ms, 14% slower than the frozen 1 ms" in said, said
    report = _report(rows, winner, task_dir)
    report.measurement["baseline_disagrees"] = said
    text = render("report.md.j2", report=report)
    first = [line for line in text.splitlines()[1:] if line.strip()][0]
    assert first.startswith("**Read this first**: the frozen baseline and the input re-timed")
