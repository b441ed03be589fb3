"""The reviewer is independent ([L] #26, item 7): its prompt holds the record's verdict, the
candidate's diff against the input and its profile digest, taken by the trusted side from the
checked snapshot (torch.profiler here), and nothing of the writer's claims or reasoning."""

from __future__ import annotations

from kernel_bakeoff.tasks.agents import RoleRequest
from kernel_bakeoff.tasks.agents.review import review
from kernel_bakeoff.tasks.check.deadline import Deadline
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from kernel_bakeoff.tasks.models.run import Review
from tests.agent_env import held_key
from tests.agent_kernels import frozen_tiny_softmax, rows_kernel
from tests.lane_doubles import LANE_ENV, prompt_of, verdict_for
from tests.scripted_api import ScriptedAPI, reply, tool


def test_the_reviewer_reads_the_verdict_the_diff_and_the_digest(tmp_path, monkeypatch):
    task = frozen_tiny_softmax(tmp_path)
    snap = tmp_path / "lane" / "snapshots" / "000-rows"
    snap.mkdir(parents=True)
    (snap / "kernel.py").write_text(rows_kernel(4))
    ref = CandidateRef(name="rows", language="triton", mode="author", path=str(snap))
    chosen = CandidateResult(candidate=ref, verdict=verdict_for("rows", ["square", "wide"], 1.5))
    seen = {}

    def decide(body):
        seen["prompt"] = prompt_of(body)
        return reply(tool("submit", candidate="rows", decision="accepted", reasons=["honest"]))

    inputs = {"candidates": [chosen], "task_dir": str(task),
              "device_env": {"TRITON_INTERPRET": "1"}}  # fmt: skip
    context = {"subject": "lane triton-author", "candidates": [], "max_spread": 0.25,
               "min_samples": 5}  # fmt: skip
    request = RoleRequest("reviewer", "", inputs, Review, Deadline(600), tmp_path / "lane" / "roles",
                          context)  # fmt: skip
    for k, v in LANE_ENV.items():
        monkeypatch.setenv(k, v)
    with ScriptedAPI([decide]) as api, held_key():
        monkeypatch.setenv("BAKEOFF_AGENT_BASE_URL", api.base_url)
        answer = review(request)
    assert answer.decision == "accepted" and answer.candidate == "rows"
    prompt = seen["prompt"]
    assert "candidate rows: PASSED, speedup 1.5000x" in prompt  # the record's verdict
    assert "+ROWS = 4" in prompt  # the diff against the input kernel
    digest = prompt.split("Profile digest")[1]
    assert "profile digest: rows on square (torch.profiler, cpu); 3 calls" in digest
    assert "| kernel | calls | share |" in digest and "not taken" not in prompt
