"""The model's roles around the lanes of a bake-off, the scripted server playing the model:
op_benchmarker's author plan decides the author lanes (over the planner's), two model lanes
that both win make one curated learned card (not one per lane), and the reporter's prose keeps
only figures the ranked table holds. Without a model, op_benchmarker and the reporter leave
the plan and the report as they were, with one line each."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.agent_env import AGENT_ENV, held_key
from tests.agent_kernels import rows_kernel, tiny_softmax
from tests.controlled_timings import control_checks
from tests.scripted_api import ScriptedAPI, receipt_in, reply, tool

INVENTED = "It runs 42.5x faster than cuBLAS."


def plan_triton_and_a_torch_author(request):
    """The planner (Discover's measuring step) without checks: the input's language to
    optimize, and a torch author lane that op_benchmarker's plan is expected to replace."""
    from kernel_bakeoff.tasks.models.plan import DiscoverPlan, PlanEntry

    baseline = json.loads((Path(request.inputs["task_dir"]) / "baseline.json").read_text())
    return DiscoverPlan(
        baseline_ms={k: v["median_ms"] for k, v in baseline["workloads"].items()},
        plan=[
            PlanEntry(language="triton", mode="optimize"),
            PlanEntry(language="torch", mode="author"),
        ],
    )


def model(body: dict) -> dict:
    """Every role's answer, chosen from the request: the two lanes run at once, so the order
    of their requests is not fixed; within a lane, the turn is the conversation's length."""
    prompt = body["messages"][0]["content"]
    turn = len(body["messages"])
    if "You are the op_benchmarker" in prompt:
        return reply(tool("submit", languages=["triton"], reasons=["rows per program"]))
    if "You are the reporter" in prompt:
        figure = re.search(r"winner: \S+ at (\d+\.\d+)x", prompt).group(1)
        summary = f"The model-written winner reached {figure}x overall. {INVENTED}"
        return reply(tool("submit", summary=summary, caveats=["Timed on a CPU host clock."]))
    if "You are update_experience" in prompt:
        return reply(
            tool(
                "submit",
                title="Softmax: rows per program",
                identity="BLOCK_M rows per program",
                delta="one program per block of rows",
                lessons=["both lanes won with rows per program"],
            )
        )
    if "You are the reviewer" in prompt:
        chosen = re.search(r"checks put `([^`]+)` forward", prompt).group(1)
        return reply(tool("submit", candidate=chosen, decision="accepted", reasons=["honest"]))
    lane = re.search(r"of lane `([^`]+)`", prompt).group(1)
    name = f"{lane}-rows"
    if turn == 1:
        return reply(tool("write_file", path="candidates/rows/kernel.py", content=rows_kernel(64)))
    if turn == 3:
        return reply(tool("check", path="candidates/rows", name=name, changed="rows", expected="x"))
    best = {"candidate": name, "receipt": receipt_in(body)}
    return reply(tool("submit", summary=f"checked {name}", best=best, lessons=["rows"]))


STEPS = 1 + 2 * 3 + 2 + 1 + 1  # op_benchmarker, two lanes' turns, two reviews, one card, prose


@pytest.mark.slow
def test_a_bakeoff_plans_authors_curates_once_and_keeps_only_the_tables_figures(
    prefect_api, tmp_path, monkeypatch
):
    from kernel_bakeoff.flows.bakeoff import bakeoff
    from kernel_bakeoff.tasks.agents.experience import measured_win
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    learned = tmp_path / "learned"
    for k, v in (AGENT_ENV | {"BAKEOFF_AGENT_LEARNED_DIR": str(learned)}).items():
        monkeypatch.setenv(k, v)
    # both lanes' kernels checked for real, timed by the test: each beats its bar, on any load
    control_checks(monkeypatch, wins="-rows$")
    softmax = tiny_softmax(tmp_path / "softmax")
    with held_key(), ScriptedAPI([model] * STEPS) as api:
        monkeypatch.setenv("BAKEOFF_AGENT_BASE_URL", api.base_url)
        report = bakeoff(BakeoffRequest(
            kernel_path=str(softmax), mode="bakeoff", budget=1, samples=5, cpu_slots=1,
            runs_root=str(tmp_path / "runs"),
            agents={"planner": "tests.test_agents_bakeoff:plan_triton_and_a_torch_author"},
        ))  # fmt: skip
        assert api.remaining() == 0
        prompts = [t["body"]["messages"][0]["content"] for t in api.turns]
    # op_benchmarker's plan, not the planner's torch author lane, made the author lane
    assert sorted(lane.key for lane in report.lanes) == ["triton_author", "triton_optimize"]
    run = Path(report.run_dir)
    assert (run / "discover" / "roles" / "op_benchmarker.answer.json").is_file()
    # both model lanes won, and the bake-off wrote one curated card for them
    task = Path(report.task_dir)
    assert all(lane.status == "completed" and measured_win(lane, task) for lane in report.lanes)
    (card,) = learned.glob("softmax-triton-*.md")
    curations = [p for p in prompts if "You are update_experience" in p]
    assert len(curations) == 1 and "one curated update of a bake-off" in curations[0]
    for lane in report.lanes:
        assert "learned card written" not in (Path(lane.lane_dir) / "lane.log").read_text()
    # the reporter's prose: the table's figure kept, the invented one dropped and said so
    figure = f"{report.winner.speedup:.3f}x"
    assert figure in report.prose and "42.5" not in report.prose
    assert "CPU host clock" in report.prose
    (dropped,) = report.prose_dropped
    assert INVENTED in dropped and "not in the table: 42.5" in dropped
    markdown = Path(report.report_path).read_text()
    assert figure in markdown and "1 sentence(s) of the reporter's prose were dropped" in markdown


def test_prose_figures_are_checked_against_the_table():
    from kernel_bakeoff.tasks.agents.outputs import ReportProse
    from kernel_bakeoff.tasks.agents.roles.reporter import checked_prose, figures

    table = "| 1 | rows64 | triton | 3.031x | 1.250x | winner |\nbaseline ms: wide 0.4216"
    assert figures(table) == {1.0, 3.031, 1.25, 0.4216}  # rows64 is a name, not a figure
    answer = ReportProse(
        summary="rows64 won at 3.031x. The bar was 1.25x! It is 3.03x faster. Baseline 0.4216 ms.",
        caveats=["fp32 and sm_90 are names", "about 10% noise"],
    )
    text, dropped = checked_prose(answer, table)
    assert text.startswith("rows64 won at 3.031x. The bar was 1.25x! Baseline 0.4216 ms.")
    assert "- fp32 and sm_90 are names" in text and "10%" not in text
    assert [d.split(" [")[0] for d in dropped] == ["It is 3.03x faster.", "about 10% noise"]


def test_without_a_model_op_benchmarker_and_reporter_leave_things_as_they_were(tmp_path):
    from kernel_bakeoff.flows.bakeoff import author_plan as plan_authors
    from kernel_bakeoff.flows.report import prose_for as report_prose
    from kernel_bakeoff.tasks.models.plan import DiscoverPlan, PlanEntry
    from kernel_bakeoff.tasks.models.run import DiscoverOutcome, Report

    plan = DiscoverPlan(baseline_ms={"w": 1.0}, plan=[PlanEntry(language="torch", mode="author")])
    outcome = DiscoverOutcome(plan=plan)
    said: list[str] = []
    assert plan_authors(outcome, str(tmp_path), str(tmp_path), {}, said.append) is outcome
    report = Report(kernel_path="k", kernel="k", mode="bakeoff", run_dir=str(tmp_path),
                    task_dir=str(tmp_path), oracle_sha256="0", baseline_ms={"w": 1.0}, rows=[])  # fmt: skip
    assert report_prose(report, {}, said.append) == ("", [])
    assert said == [
        "op_benchmarker: no model configured; the author lanes are Discover's plan",
        "reporter: no model configured; the report has no prose",
    ]
    assert not any(tmp_path.iterdir())  # no role was asked, nothing recorded
