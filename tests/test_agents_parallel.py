"""N conversations per round (tasks/agents/explore.py) against the scripted Messages-API
server: each with its own directive and share of the round's checks, the best kept by the
record whatever the answers claim, one check on the device at a time; the lane's token budget
stopping every conversation; author mode stopping all at the first correct candidate. Verdicts
are the test's own (tests/lane_doubles.py); nothing depends on this machine's speed."""

from __future__ import annotations

import json

import pytest

from kernel_bakeoff.tasks.agents.explore import default_width, shares
from kernel_bakeoff.tasks.agents.loop import model_lane
from kernel_bakeoff.tasks.agents.transcript import events
from tests.agent_env import held_key
from tests.agent_kernels import frozen_tiny_softmax, rows_kernel
from tests.lane_doubles import LANE_ENV, FakeEvaluator, Router, lane_request
from tests.scripted_api import ScriptedAPI, receipt_in, reply, tool

WORKLOADS = ["square", "wide"]


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    root = tmp_path_factory.mktemp("parallel")
    return frozen_tiny_softmax(root)


@pytest.fixture
def lane_env(monkeypatch, tmp_path, prefect_api):
    for k, v in LANE_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("BAKEOFF_AGENT_LEARNED_DIR", str(tmp_path / "learned"))
    return monkeypatch


def run(api, task, lane_dir, evaluator, monkeypatch, budget, **settings):
    for k, v in settings.items():
        monkeypatch.setenv(f"BAKEOFF_AGENT_{k.upper()}", str(v))
    monkeypatch.setenv("BAKEOFF_AGENT_BASE_URL", api.base_url)
    with held_key():
        return model_lane(lane_request(task, lane_dir, evaluator, budget=budget))


def test_width_and_shares_follow_the_budget():
    assert default_width(2, 3) == 1 and default_width(12, 3) == 2 and default_width(100, 3) == 4
    assert shares(5, 3) == [2, 2, 1] and shares(2, 3) == [1, 1] and sum(shares(7, 4)) == 7


def conversation(k: int, speedup_claim: float, second_check: bool = False) -> list:
    name = f"c{k}"
    steps = [
        reply(tool("write_file", path=f"candidates/{name}.py", content=rows_kernel(k))),
        reply(
            tool(
                "check",
                path=f"candidates/{name}.py",
                name=name,
                changed=f"{k} rows",
                expected="faster",
            )
        ),  # fmt: skip
    ]
    if second_check:  # over its share: refused, and the record holds one check of it
        steps.append(reply(tool("check", path=f"candidates/{name}.py", name=f"{name}b",
                                changed="again", expected="-")))  # fmt: skip
    steps.append(lambda body, name=name: reply(tool(
        "submit", summary=f"{name} checked",
        best={"candidate": name, "receipt": receipt_in_any(body, name), "speedup": speedup_claim},
        lessons=[f"lesson of {name}"])))  # fmt: skip
    return steps


def receipt_in_any(body: dict, name: str) -> str:
    """The receipt of `name`'s check, wherever it is in this conversation."""
    for message in body["messages"]:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_result" and f"candidate {name}:" in str(block["content"]):
                return receipt_in({"messages": [{"role": "user", "content": [block]}]})
    return "none"


def test_three_conversations_in_one_round_the_best_kept_by_the_record(task, tmp_path, lane_env):
    lane_dir = tmp_path / "lanes" / "triton-author"
    evaluator = FakeEvaluator(lane_dir, WORKLOADS, {"c1": 1.2, "c2": 1.8, "c3": 1.4})
    # conversation 1 claims 9x for its 1.2x candidate; conversation 3 tries a check over its share
    router = Router({1: conversation(1, 9.0), 2: conversation(2, 1.8),
                     3: conversation(3, 1.4, second_check=True)})  # fmt: skip
    with ScriptedAPI([router] * 11) as api:
        outcome = run(api, task, lane_dir, evaluator, lane_env, budget=3, parallel=3, per_round=1,
                      max_rounds=1)  # fmt: skip
        results = {r["tool_use_id"]: r for r in api.tool_results()}
    assert sorted(evaluator.checked) == ["c1", "c2", "c3"]  # one each: the round's 3, the budget
    assert evaluator.most_at_once == 1  # the device held by one check at a time
    refused = [r for r in results.values() if "no checks left in this round's budget" in str(r)]
    assert len(refused) == 1
    prompts = router.prompts
    directives = {k: p.split("Your direction: ")[1].split("\n")[0] for k, p in prompts.items()}
    assert len(set(directives.values())) == 3  # a different direction each
    assert all("you may check up to 1 candidate(s) now" in p for p in prompts.values())
    agent = json.loads((lane_dir / "agent.json").read_text())
    assert agent["best"] == "c2"  # by the record, not by conversation 1's 9x
    claims = {c["conversation"]: c for c in agent["claims"]}
    assert (
        claims[1]["counted"]
        and claims[1]["measured"] == 1.2
        and "not the verdict's" in claims[1]["why"]
    )
    assert {c.candidate.name for c in outcome.candidates} == {"c1", "c2", "c3"}
    transcripts = sorted(p.name for p in (lane_dir / "transcripts").glob("*.jsonl"))
    # one transcript per conversation of round 1; their numbers follow the order in which the
    # conversations opened them, which the threads decide
    assert sorted(t.split("-", 1)[1] for t in transcripts) == [
        f"kernel_author-1.{k}.jsonl" for k in (1, 2, 3)
    ]
    assert [t.split("-", 1)[0] for t in transcripts] == ["01", "02", "03"]
    memory = json.loads((lane_dir / "memory.json").read_text())
    assert {r["conversation"] for r in memory["rounds"]} == {1, 2, 3}


def test_the_lane_token_budget_stops_every_conversation(task, tmp_path, lane_env):
    lane_dir = tmp_path / "lanes" / "triton-author"
    evaluator = FakeEvaluator(lane_dir, WORKLOADS, {})
    router = Router({})  # every conversation lists files until something stops it
    with ScriptedAPI([router] * 40) as api:
        run(api, task, lane_dir, evaluator, lane_env, budget=6, parallel=3, per_round=2,
            max_lane_tokens=6000)  # fmt: skip
        turns = len(api.turns)
    # each answer costs 1200 tokens: 5 answers spend 6000; a conversation whose request was
    # already in flight then gets one more answer, no conversation another
    assert 5 <= turns <= 5 + 2
    agent = json.loads((lane_dir / "agent.json").read_text())
    assert agent["stopped"].startswith("token budget spent")
    assert agent["usage"]["input_tokens"] + agent["usage"]["output_tokens"] == 1200 * turns
    ends = [events(p)[-1] for p in sorted((lane_dir / "transcripts").glob("*.jsonl"))]
    assert len(ends) == 3 and all(
        e["outcome"].startswith("stopped: token budget spent") for e in ends
    )
    assert evaluator.checked == []


def test_author_mode_stops_every_conversation_at_the_first_correct_candidate(
    task, tmp_path, lane_env
):
    lane_dir = tmp_path / "lanes" / "triton-author"
    evaluator = FakeEvaluator(lane_dir, WORKLOADS, {"c1": 1.1})
    first = conversation(1, 1.1)

    def wait_for_the_check(body):  # conversation 2 goes on only once conversation 1 checked
        assert evaluator.done.wait(120)
        return reply(tool("list_files"))

    router = Router({1: first, 2: [wait_for_the_check]})
    with ScriptedAPI([router] * 10) as api:
        run(api, task, lane_dir, evaluator, lane_env, budget=4, parallel=2, per_round=2,
            stop_at_first_correct="true")  # fmt: skip
    agent = json.loads((lane_dir / "agent.json").read_text())
    assert agent["stopped"] == "a correct candidate (c1) was found; author mode stops"
    assert agent["best"] == "c1" and agent["rounds"] == 1 and evaluator.checked == ["c1"]
    ends = [events(p)[-1]["outcome"] for p in sorted((lane_dir / "transcripts").glob("*.jsonl"))]
    assert ends == ["stopped: a correct candidate (c1) was found; author mode stops"] * 2
