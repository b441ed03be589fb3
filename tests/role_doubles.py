"""Role responders for the flow tests, named in `agents` like any drop-in responder.

QUICK answers the planner and the lane roles fast, so the tests of the orchestration do not
wait on the backends' searches: the planner plans the input's language and Triton, and a lane
has copies of the frozen baseline checked by the real harness through its `check_fn`. The
others fail on purpose in exactly one lane, the `triton` lane, and answer like QUICK
elsewhere, so a test sees one lane fail while the others finish.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
from pathlib import Path

from kernel_bakeoff.tasks.agents import without_model
from kernel_bakeoff.tasks.models.plan import CandidateRef, DiscoverPlan, PlanEntry
from kernel_bakeoff.tasks.models.run import SearchOutcome

FAULTY_LANE = "triton"
QUICK = {
    "planner": "tests.role_doubles:plan_input_and_triton",
    "optimizer": "tests.role_doubles:baseline_copies",
    "author": "tests.role_doubles:baseline_copies",
}


def _lane(request) -> str:
    return Path(request.record_dir).parent.name  # lanes/<key>/roles


def plan_input_and_triton(request) -> DiscoverPlan:
    task_dir = Path(request.inputs["task_dir"])
    spec = json.loads((task_dir / "spec.json").read_text())
    baseline = json.loads((task_dir / "baseline.json").read_text())
    return DiscoverPlan(
        baseline_ms={k: v["median_ms"] for k, v in baseline["workloads"].items()},
        plan=[
            PlanEntry(language=spec["language"], mode="optimize"),
            PlanEntry(language="triton", mode="author"),
        ],
    )


def baseline_copies(request, label: str = "copy", kernel: str | None = None) -> SearchOutcome:
    """`budget` copies of the frozen baseline (with `kernel` as its kernel.py when given), each
    checked on the lane's device."""
    i = request.inputs
    source = Path(i["workdir"]) / label
    if not source.exists():
        shutil.copytree(Path(i["task_dir"]) / "baseline_src", source)
        for p in [source, *source.rglob("*")]:  # the frozen files are read-only: before a write
            p.chmod(0o755 if p.is_dir() else 0o644)
        if kernel is not None:
            (source / "kernel.py").write_text(kernel)
    check = i["evaluator"].bind(request.deadline)
    lane = _lane(request)
    return SearchOutcome(
        candidates=[
            check(
                CandidateRef(
                    name=f"{lane}-{label}{n}",
                    language=i["language"],
                    mode=i["mode"],
                    path=str(source),
                )
            )
            for n in range(i["budget"])
        ]
    )


def reviewer_down_in_triton(request):
    """Never answers in the triton lane while BAKEOFF_TEST_REVIEWER_DOWN is set (an outage)."""
    if _lane(request) == FAULTY_LANE and os.environ.get("BAKEOFF_TEST_REVIEWER_DOWN"):
        threading.Event().wait()  # no answer, ever
    return without_model.review(request)


def author_raises_in_triton(request):
    if _lane(request) == FAULTY_LANE:
        raise RuntimeError("fault injected by the test")
    return baseline_copies(request)


def author_kills_its_process_in_triton(request):
    if _lane(request) == FAULTY_LANE:
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
    return baseline_copies(request)


BROKEN = {
    "dies": "import os, signal\n\n\ndef rmsnorm(x, weight, eps=1e-6):\n"
    "    os.kill(os.getpid(), signal.SIGKILL)\n",
    "hangs": "import time\n\n\ndef rmsnorm(x, weight, eps=1e-6):\n    time.sleep(3600)\n",
}


def search_with_broken_candidates(request):
    """Has a candidate that kills its own process and one that hangs checked, then a good one."""
    workdir = Path(request.inputs["workdir"])
    check = request.inputs["evaluator"].bind(request.deadline)
    results = []
    for name, source in BROKEN.items():
        path = workdir / name / "kernel.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        ref = CandidateRef(name=name, language="torch", mode="optimize", path=str(path.parent))
        results.append(check(ref))
    return SearchOutcome(candidates=results + baseline_copies(request).candidates)


async def never_answers_async(request):
    import asyncio

    await asyncio.sleep(3600)


def answers_nonsense(request):
    return {"decision": "probably fine"}


def fails_once_then_reviews(request):
    """An API fault on the first attempt (recorded in the role's directory), then an answer."""
    marker = Path(request.record_dir) / "failed-once"
    if not marker.exists():
        marker.write_text("1")
        raise ConnectionError("simulated API fault")
    return without_model.review(request)


def planner_raises(request):
    raise RuntimeError("the planner fell over")


def discover_checks_two_copies(request) -> DiscoverPlan:
    """Discover's planner: two copies of the frozen baseline checked one after the other; while
    BAKEOFF_TEST_HANG_IN_DISCOVER is set it never gets past the first (a Discover killed
    half-way). Plans the input's language only."""
    i = request.inputs
    task_dir = Path(i["task_dir"])
    spec = json.loads((task_dir / "spec.json").read_text())
    baseline = json.loads((task_dir / "baseline.json").read_text())
    source = Path(i["workdir"]) / "copy"
    if not source.exists():
        shutil.copytree(task_dir / "baseline_src", source)
        for p in [source, *source.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
    check = i["evaluator"].bind(request.deadline)
    measured = []
    for n in range(2):
        ref = CandidateRef(
            name=f"discover-copy{n}", language=spec["language"], mode="optimize", path=str(source)
        )
        measured.append(check(ref))
        if os.environ.get("BAKEOFF_TEST_HANG_IN_DISCOVER"):
            threading.Event().wait()
    return DiscoverPlan(
        baseline_ms={k: v["median_ms"] for k, v in baseline["workloads"].items()},
        measured=measured,
        plan=[PlanEntry(language=spec["language"], mode="optimize")],
    )


def waits_for_go_file(request) -> SearchOutcome:
    """Answers like QUICK once the file named by BAKEOFF_TEST_GO_FILE exists (the test's cue);
    raises if the cue has not come within 10 minutes (a test that never gave it)."""
    import time

    go = Path(os.environ["BAKEOFF_TEST_GO_FILE"])
    deadline = time.monotonic() + 600
    while not go.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{go} did not appear within 600 s")
        time.sleep(0.2)
    return baseline_copies(request)
