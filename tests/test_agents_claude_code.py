"""The Claude Code driver with the real `claude` CLI (npm's @anthropic-ai/claude-code), pointed
at the scripted server through the driver's bridge: the CLI writes a Triton candidate, checks it
with `bin/check` (the harness, a receipt), submits with `bin/submit`; the CLI never holds the key
(the scripted server receives the real key only from the bridge)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from scripts.check import check
from tasks.agents.claude_code import converse
from tasks.agents.loop import judge_claim
from tasks.agents.outputs import RoundAnswer
from tasks.agents.tools import LaneTools
from tasks.agents.transcript import Ledger, events
from tasks.models import CandidateResult
from tasks.run_store import LaneStore
from tests.agent_env import held_key, settings_for
from tests.agent_kernels import rows_kernel
from tests.conftest import ROOT
from tests.scripted_api import ScriptedAPI, receipt_in, reply, text, tool
from tests.test_agents_api import softmax_task, workspace  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow


def claude_cli() -> str | None:
    found = os.environ.get("BAKEOFF_AGENT_CLAUDE_CODE") or shutil.which("claude")
    local = ROOT / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"
    return found or (str(local) if local.exists() else None)


@pytest.mark.skipif(
    claude_cli() is None,
    reason="the Claude Code CLI is not installed (.ci/run installs it with npm)",
)
def test_claude_code_cli_checks_and_submits_through_the_bridge(softmax_task, tmp_path):  # noqa: F811
    lane = tmp_path / "lane"
    ws = workspace(softmax_task, lane)
    store = LaneStore(lane)

    def check_fn(ref):
        verdict = check(softmax_task, Path(ref.path), samples=5, workdir=store.check_dir(ref.name))
        result = CandidateResult(candidate=ref, verdict=verdict)
        store.save_candidate(result)
        return result

    tools = LaneTools(
        ws, check_fn, language="triton", mode="author", allowance=lambda: 1,
        command_timeout_s=60, output_chars=8000,
    )  # fmt: skip
    kernel = ws.root / "candidates" / "rows" / "kernel.py"
    bash = "python3 bin/check candidates/rows rows64 'all rows in one program' 'faster'"

    def submit(body):
        answer = {
            "summary": "one program",
            "best": {"candidate": "rows64", "receipt": receipt_in(body)},
        }
        return reply(tool("Bash", command=f"python3 bin/submit '{json.dumps(answer)}'"))

    steps = [
        reply(tool("Write", file_path=str(kernel), content=rows_kernel(64))),
        reply(tool("Bash", command=bash, description="check")),
        submit,
        reply(text("Submitted.")),
    ]
    with held_key() as key, ScriptedAPI(steps) as api:
        settings = settings_for(api, driver="claude-code", claude_code=claude_cli(), max_turns=8)
        transcript = Ledger(lane / "transcripts", settings).open("kernel_author")
        answer = converse(
            settings=settings, transcript=transcript, system="be brief", prompt="write softmax",
            tools=tools, output=RoundAnswer,
        )  # fmt: skip
        agent_turns = [r for r in api.turns]
        assert api.remaining() == 0 and agent_turns
        assert all(api.key_of(r) == key for r in api.requests)  # forwarded with the real key
        assert "claude-cli" in agent_turns[0]["headers"]["user-agent"]
        for path in [*ws.root.rglob("*"), *lane.rglob("*.jsonl")]:
            if path.is_file() and ".git" not in path.parts:
                assert key not in path.read_text(errors="replace"), path
    assert isinstance(answer, RoundAnswer) and answer.best.candidate == "rows64"
    claim = judge_claim(ws, answer)
    assert claim["counted"] and claim["status"] == "PASSED"
    kinds = [e["event"] for e in events(transcript.path)]
    assert "tool" in kinds and "submitted" in kinds and transcript.call.input_tokens > 0
