"""Checking one candidate: a Prefect task around the harness, and the lane's `check_fn`.

The harness (`scripts.check.check`) runs the candidate in its own subprocess with a deadline
and answers with a Verdict; a wrong or hung kernel is a status there, never an exception here.
`Evaluator` is what searches and Discover receive as `check_fn`: it checks on the lane's
device, saves every result under the lane directory, reports progress, and refuses to start
a check once the role's deadline has passed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from prefect import task
from prefect.cache_policies import NONE

from tasks.agents import Deadline, DeadlineExceeded
from tasks.models import CandidateRef, CandidateResult
from tasks.run_store import LaneStore


@task(name="evaluate", cache_policy=NONE, task_run_name="check {ref.name}")
def evaluate(
    task_dir: str,
    ref: CandidateRef,
    device_env: dict[str, str],
    timeout_s: float,
    samples: int | None,
    workdir: str,
) -> CandidateResult:
    from scripts.check import check

    verdict = check(
        Path(task_dir),
        Path(ref.path),
        candidate_env=ref.env,
        device_env=device_env,
        timeout_s=timeout_s,
        samples=samples,
        workdir=Path(workdir),
    )
    return CandidateResult(candidate=ref, verdict=verdict)


def _dir_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:120] or "candidate"


class Evaluator:
    def __init__(
        self,
        task_dir: Path,
        store: LaneStore,
        device_env: dict[str, str],
        check_timeout_s: float,
        samples: int | None = None,
        log: Callable[[str], None] | None = None,
    ):
        self.task_dir = str(task_dir)
        self.store = store
        self.device_env = dict(device_env)
        self.check_timeout_s = check_timeout_s
        self.samples = samples
        self.log = log or store.log
        self.best: float | None = None

    def bind(self, deadline: Deadline) -> Callable[[CandidateRef], CandidateResult]:
        return lambda ref: self.check(ref, deadline)

    def check(self, ref: CandidateRef, deadline: Deadline) -> CandidateResult:
        remaining = deadline.remaining()
        if remaining <= 0:
            raise DeadlineExceeded(
                f"the role's {deadline.seconds:g} s deadline passed before {ref.name} was checked"
            )
        result = evaluate(
            self.task_dir,
            ref,
            self.device_env,
            min(self.check_timeout_s, remaining),
            self.samples,
            str(self.store.check_dir(_dir_name(ref.name))),
        )
        count = self.store.save_candidate(result)
        v = result.verdict
        if v.passed and v.speedup is not None and ref.mode != "baseline":
            self.best = max(self.best or 0.0, v.speedup)
        self.store.progress(evaluated=count, best_speedup=self.best)
        speed = f" {v.speedup:.3f}x" if v.speedup is not None else ""
        why = f" ({v.reason})" if v.reason else ""
        self.log(f"checked {ref.name}: {v.status.value}{speed}{why}")
        return result
