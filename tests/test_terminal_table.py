"""The table `bakeoff run` prints, from a report the test writes: every row that is not the winner
says why in a few words, the baseline row says what it is, each workload's cell holds the median
beside the speedup, a skipped lane says why and does not spin, the winner's path is labelled."""

import io

from rich.console import Console
from rich.progress import Progress

from kernel_bakeoff.flows.live import LaneSpinner
from kernel_bakeoff.flows.run_table import lane_lines, ranking_table, short, winner_line
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.models.run import LaneResult, Report, Review
from kernel_bakeoff.tasks.report.ranking import rank

from . import test_flow_plan
from .test_flow_plan import lane, result

task_dir = test_flow_plan.task_dir  # 1 ms per workload, 2% spread


def report_of(task_dir) -> Report:
    flagged = Review(candidate="tr-flagged", decision="flagged", reasons=["timing spread 40%"])
    lanes = [
        lane("torch", [result("t-fast", 1.5), result("t-slow", 1.2)],
             Review(candidate="t-fast", decision="accepted")),
        lane("triton", [result("tr-flagged", 3.0)], flagged),
        lane("hip", [result("hip-wrong", 9.0, Status.INCORRECT_NUMERICAL)],
             Review(candidate=None, decision="nothing-to-review")),
        lane("cuda", [result("cuda-fast", 4.0)], None, status="failed"),
        lane("discover", [result("baseline", 1.01, mode="baseline")], None),
    ]  # fmt: skip
    skipped = LaneResult(key="tilelang", language="tilelang", mode="author", status="skipped",
                         reason="no model configured; set ANTHROPIC_API_KEY", cache_key="k")  # fmt: skip
    rows, winner = rank(lanes, None, task_dir)
    return Report(kernel_path="k", kernel="rmsnorm", mode="bakeoff", run_dir="r",
                  task_dir=str(task_dir), oracle_sha256="0" * 64, baseline_ms={"a": 1.0, "b": 1.0},
                  rows=rows, winner=winner, lanes=lanes + [skipped])  # fmt: skip


def printed(*things) -> str:
    console = Console(file=io.StringIO(), width=220, color_system=None)
    for t in things:
        console.print(t, soft_wrap=isinstance(t, str))
    return console.file.getvalue()


def test_every_row_but_the_winner_says_why_and_medians_sit_beside_speedups(task_dir):
    report = report_of(task_dir)
    out = printed(ranking_table(report))
    cells = [[c.strip() for c in ln.split("│")] for ln in out.splitlines() if "│" in ln]
    lines = {r.name: "│".join(next(c for c in cells if c[2] == r.name)) for r in report.rows}
    by = {r.name: r for r in report.rows}
    assert by["t-fast"].status == "winner"
    for name, row in by.items():
        if row.status != "winner":
            assert row.detail and short(row.detail)[:30] in lines[name], (name, lines[name])
    assert "timing spread 40%" in lines["tr-flagged"]
    assert "reviewer: no valid answer" in lines["cuda-fast"]  # why its lane failed
    assert "re-measured" in lines["baseline"]  # what the baseline row is
    assert "frozen 1 ms" in out  # each workload's header holds the denominator
    # the speedup and, on the row's next line, the candidate's own median: 1 / 0.6667 = 1.500x
    assert "1.500x" in lines["t-fast"] and "0.6667 ms" in out
    assert by["t-fast"].median_ms["a"] * by["t-fast"].speedups["a"] == 1.0


def test_a_skipped_lane_says_why_and_the_winner_path_is_labelled(task_dir):
    report = report_of(task_dir)
    said = lane_lines(report)
    assert "lane tilelang (tilelang author): skipped: no model configured" in "\n".join(said)
    assert any(line.startswith("lane cuda (cuda optimize): failed: reviewer") for line in said)
    line = winner_line(report)
    assert "t-fast (torch, optimize) 1.500x over the frozen baseline" in line
    assert "winner's files: /runs/t-fast" in line


def test_an_ended_lane_shows_no_spinner():
    progress = Progress(LaneSpinner(), console=Console(file=io.StringIO()))
    running = progress.add_task("torch", total=4, state="running")
    ended = progress.add_task("tilelang", total=4, state="skipped: no model configured")
    tasks = {t.id: t for t in progress.tasks}
    column = progress.columns[0]
    assert str(column.render(tasks[ended])).strip() == ""
    assert str(column.render(tasks[running])).strip() != ""


def test_a_flow_that_cannot_even_be_imported_hands_back_its_error(monkeypatch, tmp_path):
    """The run's thread hands the main thread the import's own error (seen on a GPU host whose
    image lacked a dependency: the command said only `KeyError: 'report'`)."""
    import sys

    from kernel_bakeoff.flows.live import _run_flow
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    monkeypatch.setitem(
        sys.modules, "kernel_bakeoff.flows.bakeoff", None
    )  # its import raises ImportError
    out: dict = {}
    _run_flow(BakeoffRequest(kernel_path=str(tmp_path)), out)
    assert isinstance(out.get("error"), ImportError) and "report" not in out
