"""A model-driven lane run directly (`tasks.agents.loop.model_lane`, no Prefect), against a
scripted Messages-API server, with an evaluator whose verdicts the test chooses: nothing a test
asserts depends on how fast this machine runs a kernel.

`Router` lets one scripted server answer several conversations running at once: each request
is routed by the "conversation K of N" line of its prompt to that conversation's own steps.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from kernel_bakeoff.tasks.agents import RoleRequest
from kernel_bakeoff.tasks.check.deadline import Deadline
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.models.run import SearchOutcome
from kernel_bakeoff.tasks.run.directory import write_json
from tests.scripted_api import tool

LANE_ENV = {
    "BAKEOFF_AGENT_RETRY_BASE_S": "0.05",
    "BAKEOFF_AGENT_API_TIMEOUT_S": "60",
    "BAKEOFF_AGENT_API_RETRIES": "1",
}


def verdict_for(name: str, workloads: list[str], speedup: float | None) -> Verdict:
    """PASSED at `speedup` on every workload, or (None) INCORRECT_NUMERICAL."""
    if speedup is None:
        ws = [WorkloadVerdict(workload=w, status=Status.INCORRECT_NUMERICAL, reason="error 0.3",
                              max_rel_error=0.3, tolerance=2e-5) for w in workloads]  # fmt: skip
        return Verdict(candidate=name, oracle_sha256="", device="cpu",
                       status=Status.INCORRECT_NUMERICAL, reason="error 0.3", workloads=ws)  # fmt: skip
    timing = Timing(clock="host", sample_count=5, median_ms=1.0, min_ms=1.0, max_ms=1.0,
                    spread_ms=0.0, samples_ms=[1.0] * 5)  # fmt: skip
    ws = [WorkloadVerdict(workload=w, status=Status.PASSED, timing=timing, speedup=speedup,
                          triton_kernels=["_rows"]) for w in workloads]  # fmt: skip
    return Verdict(candidate=name, oracle_sha256="", device="cpu", status=Status.PASSED,
                   workloads=ws, speedup=speedup)  # fmt: skip


class FakeEvaluator:
    """The lane's check function with verdicts chosen by name (`speedups`; None: incorrect),
    saved where the real Evaluator saves them. It records how many checks ran at once."""

    device_env = {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}

    def __init__(self, lane_dir: Path, workloads: list[str], speedups: dict[str, float | None]):
        self.lane_dir = Path(lane_dir)
        self.workloads = workloads
        self.speedups = speedups
        self.checked: list[str] = []
        self.running = 0
        self.most_at_once = 0
        self.lock = threading.Lock()
        self.done = threading.Event()  # set after the first check

    def bind(self, deadline):
        return self.check

    def check(self, ref) -> CandidateResult:
        with self.lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            base = re.sub(r"-\d+$", "", ref.name)
            v = verdict_for(ref.name, self.workloads, self.speedups.get(base, 1.0))
            result = CandidateResult(candidate=ref, verdict=v)
            with self.lock:
                self.checked.append(ref.name)
                n = len(self.checked)
            write_json(self.lane_dir / "results" / f"{n:03d}-{ref.name}.json", result)
            return result
        finally:
            with self.lock:
                self.running -= 1
            self.done.set()


def lane_request(task: Path, lane_dir: Path, evaluator, mode="author", budget=2) -> RoleRequest:
    inputs = {
        "task_dir": str(task),
        "mode": mode,
        "language": "triton",
        "budget": budget,
        "workdir": str(lane_dir / "work"),
        "evaluator": evaluator,
    }
    context = {"lane": "triton-author", "op": "softmax", "language": "triton", "device": "cpu",
               "budget": budget}  # fmt: skip
    return RoleRequest("author", "", inputs, SearchOutcome, Deadline(900), lane_dir / "roles",
                       context)  # fmt: skip


def prompt_of(body: dict) -> str:
    first = body["messages"][0]["content"]
    return first if isinstance(first, str) else str(first)


class Router:
    """One scripted step that serves several conversations: by the prompt's "conversation K of
    N" line (1 when there is none), the next step of conversation K. A conversation whose steps
    are spent gets `after(body)` (default: a harmless file write, so it goes on until stopped)."""

    def __init__(self, scripts: dict[int, list], after=None):
        self.scripts = {k: list(v) for k, v in scripts.items()}
        self.after = after or (lambda body: {"reply": [tool("list_files")], "stop": "tool_use",
                                             "usage": (1000, 200)})  # fmt: skip
        self.lock = threading.Lock()
        self.prompts: dict[int, str] = {}

    def __call__(self, body: dict) -> dict:
        text = prompt_of(body)
        found = re.search(r"You are conversation (\d+) of (\d+)", text)
        k = int(found.group(1)) if found else 1
        with self.lock:
            self.prompts.setdefault(k, text)
            steps = self.scripts.get(k, [])
            step = steps.pop(0) if steps else None
        if step is None:
            return self.after(body)
        return step(body) if callable(step) else step
