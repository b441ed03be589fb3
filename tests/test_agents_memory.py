"""Against the scripted Messages-API server, a lane whose model uses the quick check and the
profile digest and acts on what they say, and whose second round starts from the first's best,
its verdict and digest, its lessons and next idea, and its dead ends (tasks/agents/memory.py).
Verdicts of timed checks are the test's own (tests/lane_doubles.py); the quick check and the
digest are the real harness and torch.profiler, in the box."""

from __future__ import annotations

import json

import pytest

from kernel_bakeoff.tasks.agents.loop import model_lane
from tests.agent_env import held_key
from tests.agent_kernels import WRONG, frozen_tiny_softmax, rows_kernel
from tests.lane_doubles import LANE_ENV, FakeEvaluator, lane_request, prompt_of
from tests.scripted_api import ScriptedAPI, last_result, receipt_in, reply, text, tool

LESSON = "four rows per program beat one row per program under the interpreter"
IDEA = "try eight rows per program"


def results_of(body: dict) -> list[str]:
    """The tool results of the last turn, in the order the tools were called."""
    content = body["messages"][-1]["content"]
    return [b["content"] for b in content if b.get("type") == "tool_result"]


def script(seen: dict) -> list:
    def pick_the_draft_that_passed(body):
        wrong, rows = results_of(body)
        seen["quick"] = {"wrong": wrong, "rows": rows}
        good = (
            "candidates/rows.py"
            if rows.startswith("quick check: PASSED")
            else "candidates/wrong.py"
        )
        seen["picked"] = good
        return reply(tool("profile", path=good, workload="square"))

    def check_after_reading_the_digest(body):
        seen["digest"] = last_result(body)
        top = seen["digest"].split("\n| ")[2].split(" |")[0]  # first row of the table
        seen["top"] = top
        return reply(tool("check", path=seen["picked"], name="rows",
                          changed=f"four rows per program; top kernel {top}",
                          expected="faster than one row per program"))  # fmt: skip

    def submit_round_1(body):
        return reply(tool("submit", summary=f"rows passed; digest's top: {seen['top']}",
                          best={"candidate": "rows", "receipt": receipt_in(body), "speedup": 1.5},
                          lessons=[LESSON], next_idea=IDEA))  # fmt: skip

    def round_2_reads_its_memory(body):
        seen["round2_prompt"] = prompt_of(body)
        return reply(tool("write_file", path="candidates/v2.py", content=rows_kernel(8)))

    def submit_round_2(body):
        return reply(tool("submit", summary="v2 was slower",
                          best={"candidate": "rows", "receipt": "none", "speedup": 1.5},
                          lessons=["eight rows did not help"]))  # fmt: skip

    def round_1_prompt(body):
        seen["round1_prompt"] = prompt_of(body)
        return reply(text("Two drafts first."),
                     tool("write_file", path="candidates/wrong.py", content=WRONG),
                     tool("write_file", path="candidates/rows.py", content=rows_kernel(4)))  # fmt: skip

    return [
        round_1_prompt,
        reply(
            tool("quick_check", path="candidates/wrong.py"),
            tool("quick_check", path="candidates/rows.py"),
        ),  # fmt: skip
        pick_the_draft_that_passed,
        check_after_reading_the_digest,
        submit_round_1,
        round_2_reads_its_memory,
        reply(
            tool(
                "check", path="candidates/v2.py", name="v2", changed="eight rows", expected="faster"
            )
        ),  # fmt: skip
        submit_round_2,
    ]


@pytest.fixture(scope="module")
def lane(tmp_path_factory, prefect_api):  # the lane's artifact goes to the test server
    root = tmp_path_factory.mktemp("memory")
    task = frozen_tiny_softmax(root)
    lane_dir = root / "lanes" / "triton-author"
    evaluator = FakeEvaluator(lane_dir, ["square", "wide"], {"rows": 1.5, "v2": 1.2, "wrong": None})
    seen: dict = {}
    mp = pytest.MonkeyPatch()
    for k, v in LANE_ENV.items():
        mp.setenv(k, v)
    mp.setenv("BAKEOFF_AGENT_PER_ROUND", "1")
    mp.setenv("BAKEOFF_AGENT_PATIENCE", "3")
    mp.setenv("BAKEOFF_AGENT_LEARNED_DIR", str(root / "learned"))
    try:
        with ScriptedAPI(script(seen)) as api, held_key():
            mp.setenv("BAKEOFF_AGENT_BASE_URL", api.base_url)
            outcome = model_lane(lane_request(task, lane_dir, evaluator, budget=2))
            left = api.remaining()
    finally:
        mp.undo()
    return {"outcome": outcome, "seen": seen, "evaluator": evaluator, "lane_dir": lane_dir,
            "left": left}  # fmt: skip


def test_the_model_quick_checks_profiles_and_acts_on_what_they_said(lane):
    seen, evaluator = lane["seen"], lane["evaluator"]
    assert lane["left"] == 0
    assert seen["quick"]["wrong"].startswith("quick check: INCORRECT_NUMERICAL")
    assert "tolerance 2e-05" in seen["quick"]["wrong"] and "no receipt" in seen["quick"]["wrong"]
    assert seen["quick"]["rows"].startswith("quick check: PASSED")
    assert "square@M=8: PASSED" in seen["quick"]["rows"]
    assert seen["picked"] == "candidates/rows.py"
    digest = seen["digest"]
    assert digest.startswith("profile digest: candidates/rows.py on square (torch.profiler, cpu)")
    assert "| kernel | calls | share |" in digest and seen["top"] in digest
    # what it learned decided what it spent: the wrong draft never cost a timed check
    assert evaluator.checked == ["rows", "v2"]
    agent = json.loads((lane["lane_dir"] / "agent.json").read_text())
    assert agent["best"] == "rows" and agent["stopped"] == "check budget spent (2 candidates)"


def test_round_two_starts_from_the_best_with_the_lessons_ideas_and_dead_ends(lane):
    seen, lane_dir = lane["seen"], lane["lane_dir"]
    first, second = seen["round1_prompt"], seen["round2_prompt"]
    assert "Lessons of earlier rounds" not in first and LESSON not in first
    assert f"round 1.1: {LESSON}" in second and f"round 1.1: {IDEA}" in second
    assert "Best so far: rows at 1.500x" in second and "candidates/best/" in second
    assert "Its profile digest:" in second and "profile digest: rows on square" in second
    assert (lane_dir / "work" / "candidates" / "best" / "kernel.py").read_text() == rows_kernel(4)
    memory = json.loads(
        (lane_dir / "memory.json").read_text()
    )  # the trusted side's, not the workspace's
    assert not (lane_dir / "work" / "memory.json").exists()
    assert memory["best"] == "rows" and memory["best_speedup"] == 1.5
    assert [r["lessons"] for r in memory["rounds"]] == [[LESSON], ["eight rows did not help"]]
    assert any(d.startswith("v2: passed at 1.200x, below the best") for d in memory["dead_ends"])
    agent = json.loads((lane_dir / "agent.json").read_text())
    assert agent["memory"]["rounds"][0]["next_idea"] == IDEA


def test_a_wins_archive_entry_keeps_the_lanes_memory(tmp_path):
    from kernel_bakeoff.tasks.agents.knowledge import write_card
    from kernel_bakeoff.tasks.agents.outputs import LearnedCard

    source = tmp_path / "snap"
    source.mkdir()
    (source / "kernel.py").write_text(rows_kernel(4))
    card = LearnedCard(title="t", identity="i", delta="d", lessons=["l"])
    memory = {"rounds": [{"round": 1, "lessons": [LESSON], "next_idea": IDEA}],
              "dead_ends": ["v2: passed at 1.200x, below the best"], "best": "rows"}  # fmt: skip
    write_card(tmp_path / "learned", card, op="softmax", kind="reduction", language="triton",
               arch="cpu", receipt="abc", ratios={"square": 1.5}, overall=1.5, source=source,
               memory=memory)  # fmt: skip
    kept = json.loads(
        (tmp_path / "learned" / "archive" / "softmax" / "abc" / "LESSONS.json").read_text()
    )
    assert kept["lane_memory"]["rounds"][0]["lessons"] == [LESSON]
    assert kept["lane_memory"]["dead_ends"] == ["v2: passed at 1.200x, below the best"]
