"""The Messages API driver against a scripted server, through the real anthropic SDK: faults
retried, an answer that never comes timed out, a malformed answer re-asked once then failed, file
tools confined to the workspace (symlinks, the oracle's reference), the key never visible to a
tool command, and the transcript and cost recorded."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.freeze import load_task
from kernel_bakeoff.tasks.agents.messages import RoleError, converse
from kernel_bakeoff.tasks.agents.outputs import ReviewAnswer
from kernel_bakeoff.tasks.agents.tools import LaneTools
from kernel_bakeoff.tasks.agents.transcript import Ledger, events
from kernel_bakeoff.tasks.agents.workspace import Workspace
from tests.agent_env import held_key, settings_for
from tests.agent_kernels import frozen_tiny_softmax
from tests.scripted_api import ScriptedAPI, fault, hang, reply, text, tool

GOOD = {"candidate": "c1", "decision": "accepted", "reasons": ["computes the op"]}


class NoTools:
    def schemas(self):
        return []

    def call(self, name, arguments):
        return "no tools", True


def talk(api, tmp_path, tools=None, output=ReviewAnswer, **overrides):
    settings = settings_for(api, **overrides)
    ledger = Ledger(tmp_path / "transcripts", settings)
    transcript = ledger.open("reviewer")
    answer = converse(
        settings=settings,
        transcript=transcript,
        system="system",
        prompt="review c1",
        tools=tools or NoTools(),
        output=output,
    )
    return answer, transcript, ledger


def test_429_and_500_are_retried_and_the_cost_recorded(tmp_path):
    steps = [fault(429), fault(500), reply(tool("submit", **GOOD), usage=(1200, 300))]
    with held_key() as key, ScriptedAPI(steps) as api:
        answer, transcript, ledger = talk(api, tmp_path, model="claude-sonnet-5")
    assert answer.decision == "accepted"
    assert len(api.turns) == 3 and transcript.call.retries == 2
    assert all(api.key_of(r) == key for r in api.requests)
    faults = [e for e in events(transcript.path) if e["event"] == "fault"]
    assert [f["attempt"] for f in faults] == [1, 2] and "429" in faults[0]["error"]
    summary = json.loads((tmp_path / "transcripts" / "summary.json").read_text())
    assert summary["input_tokens"] == 1200 and summary["output_tokens"] == 300
    assert summary["dollars"] == pytest.approx((1200 * 2.0 + 300 * 10.0) / 1e6)
    assert key not in transcript.path.read_text()


def test_faults_beyond_the_retries_fail_the_role(tmp_path):
    with held_key(), ScriptedAPI([fault(500), fault(503)]) as api:
        with pytest.raises(
            RoleError, match=r"API fault after 2 attempts: ServiceUnavailableError \(HTTP 503\)"
        ):
            talk(api, tmp_path, api_retries=1)


def test_an_answer_that_never_comes_is_timed_out(tmp_path):
    started = time.monotonic()
    with held_key(), ScriptedAPI([hang(), hang()]) as api:
        with pytest.raises(RoleError, match=r"after 2 attempts: APITimeoutError"):
            talk(api, tmp_path, api_timeout_s=1, api_retries=1)
    # two 1 s attempts, not the hang: a bound far from both, so a busy machine cannot fail it
    assert time.monotonic() - started < 60


def test_a_malformed_answer_is_sent_back_once_with_its_error(tmp_path):
    bad = {"candidate": "c1", "decision": "probably fine", "reasons": []}
    steps = [reply(tool("submit", **bad)), reply(tool("submit", **GOOD))]
    with held_key(), ScriptedAPI(steps) as api:
        answer, _, _ = talk(api, tmp_path)
        sent_back = api.tool_results()
    assert answer.decision == "accepted"
    assert sent_back[0]["is_error"] and "decision" in sent_back[0]["content"]


def test_a_second_malformed_answer_fails_the_role_with_the_reason(tmp_path):
    bad = {"candidate": "c1", "decision": "probably fine", "reasons": ["x"]}
    with (
        held_key(),
        ScriptedAPI([reply(tool("submit", **bad)), reply(tool("submit", **bad))]) as api,
    ):
        with pytest.raises(
            RoleError, match="did not validate after one re-ask: 1 validation error"
        ):
            talk(api, tmp_path)


def test_an_answer_without_tools_is_nudged_once_then_fails(tmp_path):
    with held_key(), ScriptedAPI([reply(text("done")), reply(text("really done"))]) as api:
        with pytest.raises(RoleError, match="ended without calling submit"):
            talk(api, tmp_path)


def test_a_tool_call_whose_input_is_not_an_object_is_a_tool_error(tmp_path):
    """Null, a list, a string or no input at all: the model reads a tool error and goes on (a
    null input once ended the lane with KeyError: 'input'), and the conversation sent back
    holds only object inputs, as the API requires."""
    calls = [
        {**tool("run_command"), "input": None},
        {**tool("read_file"), "input": ["x.py"]},
        {**tool("write_file"), "input": "x.py"},
        {k: v for k, v in tool("list_files").items() if k != "input"},
        {**tool("submit"), "input": None},
    ]
    with held_key(), ScriptedAPI([reply(*calls), reply(tool("submit", **GOOD))]) as api:
        answer, _, _ = talk(api, tmp_path)
        sent_back = api.tool_results()
        second = api.turns[1]["body"]["messages"]
    assert answer.decision == "accepted"
    said = [r["content"] for r in sent_back[:5]]
    assert all(r["is_error"] for r in sent_back[:5]), sent_back
    assert "run_command: its input is null or missing" in said[0], said
    assert "a list, not an object" in said[1] and "a str, not an object" in said[2], said
    assert "null or missing" in said[3] and "does not match the schema" in said[4], said
    uses = [b for m in second if isinstance(m["content"], list) for b in m["content"]]
    assert all(b["input"] == {} for b in uses if b.get("type") == "tool_use"), uses


@pytest.fixture(scope="module")
def softmax_task(tmp_path_factory) -> Path:
    return frozen_tiny_softmax(tmp_path_factory.mktemp("t"))


def workspace(task: Path, lane_dir: Path) -> Workspace:
    spec, _, baseline = load_task(task)
    sheet = {
        "spec": spec,
        "mode": "author",
        "language": "triton",
        "arch": "cpu",
        "budget": 1,
        "per_round": 1,
        "baseline_ms": baseline.medians(),
        "incumbent_language": spec.language,
        "reference_hidden": True,
    }
    oracle = json.loads((task / "MANIFEST.json").read_text())["oracle_sha256"]
    return Workspace.create(
        lane_dir / "work",
        lane_dir,
        task,
        spec=spec,
        oracle=oracle,
        sheet=sheet,
        cards=[],
        starts=[],
        mode="author",
    )


def test_file_tools_refuse_outside_paths_symlinks_and_the_reference(softmax_task, tmp_path):
    ws = workspace(softmax_task, tmp_path / "lane")
    assert not (ws.root / "oracle" / "reference.py").exists()  # the reference is not copied
    reference = softmax_task / "baseline_src" / "reference.py"
    tools = LaneTools(
        ws,
        None,
        language="triton",
        mode="author",
        allowance=lambda: 0,
        command_timeout_s=20,
        output_chars=4000,
    )
    (ws.root / "candidates" / "ref").symlink_to(reference)
    (ws.root / "candidates" / "up").symlink_to(tmp_path)
    calls = [
        tool("read_file", path="TASK.md"),
        tool("read_file", path="/etc/hostname"),
        tool("read_file", path="../receipts.json"),
        tool("read_file", path=str(reference)),
        tool("read_file", path="candidates/ref"),
        tool("list_files", path="candidates/up"),
        tool("write_file", path="oracle/kernel.py", content="x"),
        tool("write_file", path="candidates/up/escape.py", content="x"),
        tool("write_file", path=".git/config", content="x"),
        tool("write_file", path="candidates/mine/kernel.py", content="print(1)\n"),
    ]
    steps = [reply(c) for c in calls] + [reply(tool("submit", **GOOD))]
    with held_key(), ScriptedAPI(steps) as api:
        talk(api, tmp_path, tools=tools)
        results = api.tool_results()
    outcome = [(r["is_error"], r["content"]) for r in results]
    assert not outcome[0][0] and "# Task: author `softmax`" in outcome[0][1]
    for is_error, content in outcome[1:9]:
        assert is_error and content.startswith("refused:"), content
    assert "outside the workspace" in outcome[1][1] and "outside the workspace" in outcome[2][1]
    assert "oracle's reference" in outcome[3][1] and "oracle's reference" in outcome[4][1]
    assert "outside the workspace" in outcome[5][1] and "read-only" in outcome[6][1]
    assert not (tmp_path / "escape.py").exists()
    assert not outcome[9][0] and (ws.root / "candidates" / "mine" / "kernel.py").is_file()


def test_tool_commands_never_see_the_key_and_are_killed_at_their_deadline(softmax_task, tmp_path):
    ws = workspace(softmax_task, tmp_path / "lane")
    tools = LaneTools(
        ws,
        None,
        language="triton",
        mode="author",
        allowance=lambda: 0,
        command_timeout_s=2,
        output_chars=200000,
    )
    search = "env; cat /proc/self/environ | tr '\\0' '\\n'; grep -l sk-ant- /proc/*/environ"
    sleeper = "sleep 600 & sleep 600; echo never"
    steps = [
        reply(tool("run_command", command=search)),
        reply(tool("run_command", command=sleeper)),
    ]
    steps.append(reply(tool("submit", **GOOD)))
    started = time.monotonic()
    with held_key() as key, ScriptedAPI(steps) as api:
        talk(api, tmp_path, tools=tools)
        results = api.tool_results()
        assert key not in results[0]["content"] and "sk-ant-" not in results[0]["content"]
        assert "ANTHROPIC" not in results[0]["content"] and "PREFECT_" not in results[0]["content"]
        assert "HOME=" + str(ws.root / ".home") in results[0]["content"]
        for path in ws.root.rglob("*"):
            if path.is_file() and ".git" not in path.parts:
                assert key not in path.read_text(errors="replace")
    assert "killed after its 2 s deadline" in results[1]["content"]
    # killed at its 2 s deadline, not after its 600 s: a bound far from both
    assert "never" not in results[1]["content"] and time.monotonic() - started < 120
    assert os.environ.get("ANTHROPIC_API_KEY") is None
