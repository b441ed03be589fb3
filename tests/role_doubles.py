"""Role responders that misbehave on purpose, for the flow tests (named in `agents`).

Each one fails in exactly one lane, the `triton` lane, and answers like the deterministic
responder everywhere else, so a test sees one lane fail while the others finish. They are
real responders run through the real role wrapper; only their behaviour is contrived.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

from tasks import roles_default
from tasks.models import CandidateRef
from tasks.results import SearchOutcome

FAULTY_LANE = "triton"


def _lane(request) -> str:
    return Path(request.record_dir).parent.name  # lanes/<key>/roles


def reviewer_down_in_triton(request):
    """Never answers in the triton lane while BAKEOFF_TEST_REVIEWER_DOWN is set (an outage)."""
    if _lane(request) == FAULTY_LANE and os.environ.get("BAKEOFF_TEST_REVIEWER_DOWN"):
        threading.Event().wait()  # no answer, ever
    return roles_default.review(request)


def author_raises_in_triton(request):
    if _lane(request) == FAULTY_LANE:
        raise RuntimeError("fault injected by the test")
    return roles_default.search(request)


def author_kills_its_process_in_triton(request):
    if _lane(request) == FAULTY_LANE:
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
    return roles_default.search(request)


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
    rest = roles_default.search(request).candidates
    return SearchOutcome(candidates=results + rest)


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
    return roles_default.review(request)
