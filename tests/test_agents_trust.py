"""What a model's lane cannot do, piece by piece (no model server, no Prefect): a tool call that is
wrong in any way comes back as an error to read; a verdict or receipt rewritten on disk matches
nothing; git in the workspace runs no hook or filter the model planted; a number claimed at the
precision shown counts; a Triton candidate that launched no Triton kernel is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from kernel_bakeoff.tasks.agents.loop import same_figure
from kernel_bakeoff.tasks.agents.tools import INPUT_CHARS, LaneTools
from kernel_bakeoff.tasks.check.language_rule import NO_TRITON, ruled
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from kernel_bakeoff.tasks.run.directory import write_json
from tests.agent_kernels import frozen_tiny_softmax, rows_kernel
from tests.misbehaving_model import FORGE
from tests.test_agents_api import workspace


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("trust")
    return frozen_tiny_softmax(root)


def passed(name: str, path: Path, speedup: float, kernels=(), language="triton") -> CandidateResult:
    timing = Timing(clock="host", sample_count=1, median_ms=1.0, min_ms=1.0, max_ms=1.0,
                    spread_ms=0.0, samples_ms=[1.0])  # fmt: skip
    w = WorkloadVerdict(workload="square", status=Status.PASSED, timing=timing, speedup=speedup,
                        triton_kernels=list(kernels))  # fmt: skip
    v = Verdict(candidate=name, oracle_sha256="", device="cpu", status=Status.PASSED,
                workloads=[w], speedup=speedup)  # fmt: skip
    ref = CandidateRef(name=name, language=language, mode="author", path=str(path))
    return CandidateResult(candidate=ref, verdict=v)


def checked(ws, name: str, speedup: float) -> tuple[CandidateResult, str]:
    """A check as LaneTools.check records it: snapshot, the Evaluator's saved result, receipt."""
    source = ws.root / "candidates" / name
    source.mkdir(parents=True)
    (source / "kernel.py").write_text(f"# {name}\n")
    snap = ws.snapshot(source, name)
    result = passed(name, snap, speedup, kernels=["_rows"])
    write_json(ws.lane_dir / "results" / f"{ws.checked():03d}-{name}.json", result)
    return result, ws.record(result, "x", "y")["receipt"]


def lane_tools(ws, check_fn=None, **kw) -> LaneTools:
    return LaneTools(ws, check_fn, language="triton", mode="author", allowance=lambda: 1,
                     command_timeout_s=20, output_chars=4000, **kw)  # fmt: skip


def test_bad_tool_calls_come_back_as_errors_the_model_reads(task, tmp_path):
    ws = workspace(task, tmp_path / "lane")

    def broken_check(ref):
        raise RuntimeError("the evaluator broke")

    tools = lane_tools(ws, broken_check)
    cases = {
        "bad arguments for run_command: timeout_s: Input should be a valid number": (
            "run_command", {"command": "true", "timeout_s": "soon"}),
        "bad arguments for write_file: content: Field required; mode: Extra inputs": (
            "write_file", {"path": "candidates/a.py", "mode": "0777"}),
        "bad arguments for read_file: offset: Input should be greater than or equal to 0": (
            "read_file", {"path": "TASK.md", "offset": -5}),
        "bad arguments for list_files: (input): Input should be a valid dictionary": (
            "list_files", ["not", "a", "dict"]),
        "unknown tool 'erase_all'; the tools are list_files": ("erase_all", {"target": "/"}),
        "check failed: RuntimeError: the evaluator broke": (
            "check", {"path": "candidates", "name": "c", "changed": "-", "expected": "-"}),
        f"over the limit of {INPUT_CHARS}": (
            "write_file", {"path": "candidates/big.py", "content": "x" * (5 << 20)}),
    }  # fmt: skip
    for expected, (name, arguments) in cases.items():
        text, is_error = tools.call(name, arguments)
        assert is_error and expected in text, text
        assert len(text) < 1000  # nothing of a big input echoed back
    assert not (ws.root / "candidates" / "big.py").exists()
    text, is_error = tools.call("run_command", {"command": "echo fine", "timeout_s": 5})
    assert not is_error and "fine" in text
    schemas = {s["name"]: s for s in tools.schemas()}
    assert schemas["run_command"]["input_schema"]["additionalProperties"] is False
    assert f"over {INPUT_CHARS} characters is refused" in schemas["write_file"]["description"]


def test_a_forged_verdict_and_receipt_match_nothing(task, tmp_path, monkeypatch):
    ws = workspace(task, tmp_path / "lane")
    slow, receipt = checked(ws, "slow", 0.0004)
    assert ws.verify(receipt, "slow") == slow and ws.results() == [slow]
    tools = lane_tools(ws)
    record = {p: p.read_bytes() for p in ws.lane_dir.rglob("*.json")}
    # In the box (scripts/box.py) the record is out of the command's sight: the forgery fails.
    text, is_error = tools.call("run_command", {"command": FORGE})
    assert "forged receipt:" not in text, text
    assert {p: p.read_bytes() for p in ws.lane_dir.rglob("*.json")} == record
    # Should the files be rewritten anyway (no box, on purpose), they still count for nothing.
    monkeypatch.setenv("BAKEOFF_ISOLATION", "none")
    text, is_error = tools.call("run_command", {"command": FORGE})
    assert not is_error and "forged receipt:" in text, text
    forged = text.split("forged receipt: ")[1].split()[0]
    on_disk = json.loads(sorted((ws.lane_dir / "results").glob("*.json"))[-1].read_text())
    assert on_disk["verdict"]["speedup"] == 10.0  # the files were rewritten
    assert ws.verify(forged, "slow") is None  # ... and count for nothing in this run
    assert ws.results() == [slow] and ws.best().verdict.speedup == 0.0004
    # read back later from the files (update_experience, another process): nothing matches
    again = type(ws)(ws.root, ws.lane_dir, ws.task_dir, ws.spec, ws.oracle_sha256)
    assert again.verify(forged, "slow") is None and again.verify(receipt, "slow") is None
    assert again.results() == []
    # an untouched record verifies from disk; without the key nothing does
    ok_lane = workspace(task, tmp_path / "ok")
    honest, ok_receipt = checked(ok_lane, "honest", 1.5)
    fresh = type(ok_lane)(ok_lane.root, ok_lane.lane_dir, task, ok_lane.spec, ok_lane.oracle_sha256)
    assert fresh.verify(ok_receipt, "honest") == honest
    assert fresh.verify(ok_receipt, "other") is None
    assert not any(ok_lane.root.rglob("receipt.key"))  # the key is not in the workspace
    ok_lane.key_path.unlink()
    assert fresh.verify(ok_receipt, "honest") is None


def test_git_runs_no_hook_or_filter_the_model_planted(task, tmp_path, monkeypatch):
    ws = workspace(task, tmp_path / "lane")
    marker = tmp_path / "hook-ran"
    from tests.misbehaving_model import plant_hooks

    # In the box the repository beside the workspace is out of reach: nothing is planted there.
    # Judged on the host, not by the command's own word: as an ordinary user the box's uid owns
    # the parents of its bound paths, made in its private /tmp, so `../work.git` is made there
    # and the command says "planted" (as root it is refused).
    text, is_error = lane_tools(ws).call("run_command", {"command": plant_hooks(str(marker))})
    assert "planted" not in text or os.geteuid() != 0, text
    assert not (ws.lane_dir / "work.git" / "hooks" / "post-commit").exists()
    assert "filter" not in (ws.lane_dir / "work.git" / "config").read_text()
    # Planted anyway (no box, on purpose): git still runs none of it.
    monkeypatch.setenv("BAKEOFF_ISOLATION", "none")
    text, is_error = lane_tools(ws).call("run_command", {"command": plant_hooks(str(marker))})
    assert not is_error and "planted" in text, text
    checked(ws, "c1", 1.0)  # a check commits the workspace
    assert not marker.exists()
    assert ws.history()[-1].startswith("check 1 c1: PASSED")
    assert not (ws.root / ".git" / "HEAD").exists()  # the repository lives outside the workspace
    assert "filter" not in (ws.lane_dir / "work.git" / "config").read_text()


def test_a_claim_counts_at_the_precision_it_was_shown():
    assert same_figure(1.234, 1.23449) and same_figure(2.0, 1.9996)
    assert not same_figure(10.0, 0.0004) and not same_figure(1.24, 1.23)
    assert not same_figure(1.0, None)


def test_the_language_rule_refuses_a_triton_candidate_without_triton(tmp_path):
    fake = passed("fake", tmp_path, 1.013)
    refused = ruled(fake)
    assert refused.verdict.status is Status.FLAGGED and refused.verdict.reason == NO_TRITON
    assert refused.verdict.speedup is None
    (tmp_path / "kernel.py").write_text("import triton\n\n@triton.jit\ndef _rows(x):\n    pass\n")
    assert ruled(passed("real", tmp_path, 1.5, kernels=["_rows"])).verdict.passed
    assert ruled(passed("eager", tmp_path, 1.5, language="torch")).verdict.passed
    base = passed("input", tmp_path, 1.0)
    base = base.model_copy(
        update={"candidate": base.candidate.model_copy(update={"mode": "baseline"})}
    )
    assert ruled(base).verdict.passed


def test_the_harness_names_the_triton_kernels_a_candidate_launched(task, tmp_path):
    triton_dir, torch_dir = tmp_path / "rows", tmp_path / "torch"
    for d, source in ((triton_dir, rows_kernel(64)),
                      (torch_dir, "import torch\n\ndef softmax(x):\n    return torch.softmax(x, -1)\n")):  # fmt: skip
        d.mkdir()
        (d / "kernel.py").write_text(source)
    rows = check(task, triton_dir, timeout_s=300, samples=3, workdir=tmp_path / "w1")
    plain = check(task, torch_dir, timeout_s=300, samples=3, workdir=tmp_path / "w2")
    assert rows.passed and rows.triton_kernels == ["_rows"]
    assert all(w.triton_kernels == ["_rows"] for w in rows.workloads)
    assert plain.passed and plain.triton_kernels == []


def test_a_role_cut_at_its_deadline_ends_without_a_traceback(monkeypatch):
    """The role's loop is gone when its abandoned responder returns: nothing is raised then."""
    import asyncio
    import threading
    from types import SimpleNamespace

    from kernel_bakeoff.tasks.agents.role_task import _in_daemon_thread

    release, raised = threading.Event(), []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))

    async def cut() -> None:
        work = _in_daemon_thread(lambda request: release.wait(60), SimpleNamespace(role="cut"))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(work, 0.05)

    asyncio.run(cut())  # its loop is closed now
    (thread,) = [t for t in threading.enumerate() if t.name == "role-cut"]
    release.set()
    thread.join(60)
    assert not thread.is_alive() and raised == []


def test_only_claims_the_record_does_not_bear_out_are_noted(task, tmp_path):
    from kernel_bakeoff.tasks.agents.loop import judge_claim, noted_claims
    from kernel_bakeoff.tasks.agents.outputs import Claim, RoundAnswer

    ws = workspace(task, tmp_path / "lane")
    _, receipt = checked(ws, "c1", 1.23456)

    def claim(candidate, receipt, speedup):
        answer = RoundAnswer(summary="-", best=Claim(candidate=candidate, receipt=receipt,
                                                     speedup=speedup))  # fmt: skip
        return judge_claim(ws, answer) | {"round": 1}

    honest = [claim("c1", receipt, 1.2346), claim("c1", receipt, 1.235), claim("c1", receipt, None)]
    assert all(c["counted"] and "why" not in c for c in honest)  # as shown: 4 and 3 decimals
    wrong, ghost = claim("c1", receipt, 1.3), claim("c9", "0" * 20, 3.0)
    assert wrong["counted"] and "not the verdict's (1.235x)" in wrong["why"]
    noted = noted_claims([*honest, wrong, ghost])
    assert [(n.candidate, n.outcome) for n in noted] == [("c1", "corrected"), ("c9", "ignored")]
    assert noted[0].measured == 1.23456 and noted[1].measured is None
