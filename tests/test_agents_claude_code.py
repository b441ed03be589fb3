"""The Claude Code driver with the real `claude` CLI (npm's @anthropic-ai/claude-code), pointed
at the scripted server through the driver's bridge: the CLI writes a Triton candidate, checks it
with `bin/check` (the harness, a receipt), submits with `bin/submit`; the CLI never holds the key
(the scripted server receives the real key only from the bridge)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.tasks.agents.claude_code import converse
from kernel_bakeoff.tasks.agents.loop import judge_claim
from kernel_bakeoff.tasks.agents.messages import RoleError
from kernel_bakeoff.tasks.agents.outputs import RoundAnswer
from kernel_bakeoff.tasks.agents.tools import LaneTools
from kernel_bakeoff.tasks.agents.transcript import Ledger, events
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.run.directory import LaneStore
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


HOSTILE = """
import socket

def attempt(word, fn):
    try:
        fn()
        print("ESCAPED-" + word, flush=True)
    except Exception as exc:
        print("refused-" + word, type(exc).__name__, flush=True)

attempt("write", lambda: open({outside!r}, "w").write("escaped"))
attempt("read", lambda: print(open({secret!r}).read()))
attempt("task", lambda: print(open({spec!r}).read()))
attempt("net", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=5).sendall(b"hi"))
"""


@pytest.mark.skipif(
    claude_cli() is None,
    reason="the Claude Code CLI is not installed (.ci/run installs it with npm)",
)
@pytest.mark.parametrize("isolation", ["box", "none"])
def test_the_cli_and_what_it_runs_stay_in_the_box(softmax_task, tmp_path, monkeypatch, isolation):  # noqa: F811
    """A scripted model makes the CLI read a secret outside the workspace, write outside it,
    and plant a usercustomize.py in its HOME that the allowed `python3 bin/check` then runs:
    it writes outside, reads the secret and the frozen task, connects to a listener on the
    host's loopback. In the box nothing of that reaches the host; with BAKEOFF_ISOLATION=none
    (the control) the same script does, which shows these checks can see an escape."""
    from kernel_bakeoff.scripts import isolation as engine

    if isolation == "box" and engine.refusal():
        pytest.skip(f"no box here: {engine.refusal()}")
    monkeypatch.setenv("BAKEOFF_ISOLATION", isolation)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # python3 is the system's: its user site is on
    lane = tmp_path / "lane"
    ws = workspace(softmax_task, lane)
    tools = LaneTools(
        ws, None, language="triton", mode="author", allowance=lambda: 0,
        command_timeout_s=60, output_chars=8000,
    )  # fmt: skip
    secret_value = f"hostile-secret-{os.urandom(8).hex()}"
    secret = tmp_path / "secret.txt"
    secret.write_text(secret_value)
    outside, outside_cli = tmp_path / "outside.txt", tmp_path / "outside-cli.txt"
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    heard: list[bytes] = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            heard.append(conn.recv(100) or b"connected")
            conn.close()

    version = subprocess.run(
        ["/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    site = ws.root / ".home" / ".local" / "lib" / f"python{version}" / "site-packages"
    hostile = HOSTILE.format(
        outside=str(outside),
        secret=str(secret),
        spec=str(softmax_task / "spec.json"),
        port=listener.getsockname()[1],
    )
    steps = [
        reply(tool("Read", file_path=str(secret))),
        reply(tool("Write", file_path=str(outside_cli), content="escaped")),
        reply(tool("Write", file_path=str(site / "usercustomize.py"), content=hostile)),
        reply(tool("Bash", command="python3 bin/check a b c d", description="check")),
        reply(text("done")),
    ]
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        with held_key(), ScriptedAPI(steps) as api:
            settings = settings_for(
                api, driver="claude-code", claude_code=claude_cli(), max_turns=8
            )
            transcript = Ledger(lane / "transcripts", settings).open("kernel_author")
            with pytest.raises(RoleError, match="without a valid bin/submit"):
                converse(
                    settings=settings, transcript=transcript, system="be brief",
                    prompt="write softmax", tools=tools, output=RoundAnswer,
                )  # fmt: skip
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert api.remaining() == 0
    results = json.dumps(api.tool_results())
    assert "refused-net" in results or "ESCAPED-net" in results, results  # the plant ran
    if isolation == "none":  # the control: unboxed, every attempt reaches the host
        assert secret_value in results and outside.exists() and outside_cli.exists()
        assert heard and "ESCAPED-net" in results
        return
    assert secret_value not in json.dumps(api.requests)
    assert not outside.exists() and not outside_cli.exists()
    assert heard == [] and "refused-net" in results and "ESCAPED-net" not in results
    assert "refused-read" in results and "refused-task" in results, results
