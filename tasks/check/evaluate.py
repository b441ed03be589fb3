"""Checking one candidate: a Prefect task around the harness, and the lane's `check_fn`.

The harness (`scripts.check.check`) runs the candidate in its own subprocess with a deadline
and answers with a Verdict; a wrong or hung kernel is a status there, never an exception here.
`Evaluator` is what searches and Discover receive as `check_fn`: it checks on the lane's
device, saves every result under the lane directory, reports progress, and refuses to start
a check once the role's deadline has passed.

Within one run directory, a candidate is checked once: a verdict is kept under
`checked/<identity>.json`, keyed by the candidate's sources, its environment, the check's
settings and the frozen task, and Discover and every lane that meet the same candidate reuse
it. Each identity also gets its own compiler cache (`compile-cache/<identity>/`), never shared
with another candidate's source; the frozen baseline has one of its own (`compile-cache/
baseline-<hash of its sources>/`), which its freeze fills and which serves its run beside every
check and the frozen input checked as a candidate, so a CUDA or Triton baseline is built once a
run.
A failure of the harness itself (HARNESS_ERROR) is checked once more by the same judge, and is
never kept for reuse.

A caller that knows several candidates ahead (Discover; a search lane, for the configurations
its strategy proposes whatever the scores) may `precompile` them first: their compiles run side
by side (`precompile_jobs()` at once, on the device the caller holds, before any check), and
each check then finds its compiler cache full. A compile is the host's work (Dynamo, Inductor
and Triton codegen, a C++ build) and each candidate has one, so on a host with cores to spare
they overlap instead of queueing behind one another's timed runs. By default only C++ builds
do (`BUILT_LANGUAGES`): a build is nearly the whole of its check, and a cuda lane makes one per
candidate (figures: docs/studies/h200_figures.md, "Precompiling").
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prefect import task
from prefect.cache_policies import NONE

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.scripts.check import check, precompile
from kernel_bakeoff.scripts.freeze import CACHES, baseline_cache_key
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.check import judgement
from kernel_bakeoff.tasks.check.deadline import Deadline, DeadlineExceeded
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from kernel_bakeoff.tasks.run.directory import LaneStore, code_version, write_json
from kernel_bakeoff.tasks.run.settings import current


@task(name="evaluate", cache_policy=NONE, task_run_name="check {ref.name}")
def evaluate(
    task_dir: str,
    ref: CandidateRef,
    device_env: dict[str, str],
    timeout_s: float,
    samples: int | None,
    workdir: str,
    cache_dir: str | None = None,
    baseline_cache_dir: str | None = None,
) -> CandidateResult:

    def once(attempt: str):
        return check(
            Path(task_dir),
            Path(ref.path),
            candidate_env=ref.env,
            device_env=device_env,
            timeout_s=timeout_s,
            samples=samples,
            workdir=Path(workdir) / attempt,
            cache_dir=Path(cache_dir) if cache_dir else None,
            baseline_cache_dir=Path(baseline_cache_dir) if baseline_cache_dir else None,
        )

    verdict = once("first")
    # The harness's fault: once more, by the same judge under the same rules (a second path,
    # once a fresh interpreter, was one a candidate could steer its check into).
    if verdict.status is Status.HARNESS_ERROR:
        verdict = once("again")
    return CandidateResult(candidate=ref, verdict=verdict)


def identity(task: FrozenTask, ref: CandidateRef, samples: int | None, timeout_s: float) -> str:
    """What makes two checks the same check: the candidate's files (names and bytes), its
    environment, the check's settings and the frozen task (its oracle id, which its verified
    files give). Every file counts, .pyc files too (a candidate can import one that has no
    source)."""
    payload = {
        "files": manifest.files_of(Path(ref.path), every=True),
        "settings": {"env": ref.env, "samples": samples, "timeout_s": timeout_s},
        "code": code_version(),
        "task": task.oracle_sha256,
    }
    return manifest.cache_key(payload, 24)


BUILT_LANGUAGES = ("cuda", "hip")  # candidates a C++ toolchain builds (nvcc, hipcc)


def precompile_jobs(refs: list[CandidateRef] | None = None) -> int:
    """Precompiles at once: BAKEOFF_PRECOMPILE_JOBS; else, when every one of `refs` is a C++
    build, a quarter of the host's cores (2 to 4); else none (under 2, none runs).

    Off for torch.compile and Triton because it did not pay on a GPU: a check that finds its
    graphs compiled still traces, loads and captures them, so the checks after a precompile
    took nearly as long and Discover took longer. A C++ build is nearly all of its check and
    leaves nothing to redo in the check: builds side by side should cost about one build's
    time; not yet measured on a GPU. Figures: docs/studies/h200_figures.md, "Precompiling"."""
    given = current().precompile_jobs  # a bad value is BadInput there
    if given is not None:
        return given
    if refs and all(r.language in BUILT_LANGUAGES for r in refs):
        return max(2, min(4, (os.cpu_count() or 2) // 4))
    return 0


def _dir_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:120] or "candidate"


class Evaluator:
    """Checks a lane's candidates against the frozen task it is handed, opened once. The
    harness itself is handed the task's directory: the judge, in a process of its own, verifies
    the task again and trusts nothing the orchestration side hands it."""

    def __init__(
        self,
        task: FrozenTask,
        store: LaneStore,
        device_env: dict[str, str],
        check_timeout_s: float,
        samples: int | None = None,
        log: Callable[[str], None] | None = None,
    ):
        self.task = task
        self.task_dir = str(task.task_dir)
        self.store = store
        self.device_env = dict(device_env)
        self.check_timeout_s = check_timeout_s
        self.samples = samples
        self.log = log or store.log
        self.best: float | None = None
        # Shared by Discover and every lane of the run: beside the frozen task of a run
        # directory (runs/<op>-<hash>/task), else beside the lane's own directory.
        where = task.task_dir
        self.shared = where.parent if where.name == "task" else store.root

    def bind(self, deadline: Deadline) -> Callable[[CandidateRef], CandidateResult]:
        return lambda ref: self.check(ref, deadline)

    def bind_precompile(self, deadline: Deadline) -> Callable[[list[CandidateRef]], None]:
        return lambda refs: self.precompile(refs, deadline)

    def precompile(self, refs: list[CandidateRef], deadline: Deadline) -> None:
        """Fill the compiler caches of `refs` not yet checked in this run, `precompile_jobs()`
        at once, on this evaluator's device. Only before checks: the caller holds the device
        and nothing is being timed on it. Advice only: a failure here is logged, and the
        check judges the candidate as it would have."""

        todo = [r for r in refs if not self._kept(self._key(r)).is_file()]
        jobs = precompile_jobs(todo)
        if jobs < 2 or len(todo) < 2 or deadline.remaining() <= 0:
            return
        self.log(f"precompiling {len(todo)} candidate(s), {jobs} at once")

        def one(ref: CandidateRef) -> None:
            try:
                done = precompile(
                    Path(self.task_dir),
                    Path(ref.path),
                    cache_dir=self._cache_dir(ref, self._key(ref)),
                    candidate_env=ref.env,
                    device_env=self.device_env,
                    timeout_s=max(1.0, min(self.check_timeout_s, deadline.remaining())),
                    workdir=self.store.check_dir(_dir_name(ref.name)) / "precompile",
                )
            except Exception as exc:  # its check meets the same problem and reports it
                self.log(f"precompiling {ref.name} failed: {type(exc).__name__}: {exc}")
                return
            how = f"{done.status.value}: {done.reason}" if done.status else "every first call made"
            self.log(f"precompiled {ref.name} in {done.seconds:.1f} s ({how})")

        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(one, todo))

    def _key(self, ref: CandidateRef) -> str:
        return identity(self.task, ref, self.samples, self.check_timeout_s)

    @functools.cached_property
    def _baseline_cache(self) -> Path:
        """The frozen baseline's cache, beside every check of this task, keyed by its sources:
        in a run directory, the one its freeze built into (`scripts.freeze.run_baseline_cache`)."""
        return self.shared / CACHES / baseline_cache_key(self.task.baseline_src)

    def _kept(self, key: str) -> Path:
        return self.shared / "checked" / f"{key}.json"

    def _cache_dir(self, ref: CandidateRef, key: str) -> Path:
        """A candidate's own cache; the frozen input checked as a candidate (Discover's first
        check) shares the baseline's, whose build it is: a CUDA C++ baseline, whose build is most
        of a check, is not built again for it."""
        if ref.mode == "baseline":
            return self._baseline_cache
        return self.shared / CACHES / key

    def check(self, ref: CandidateRef, deadline: Deadline) -> CandidateResult:
        remaining = deadline.remaining()
        if remaining <= 0:
            raise DeadlineExceeded(
                f"the role's {deadline.seconds:g} s deadline passed before {ref.name} was checked"
            )
        timeout_s = min(self.check_timeout_s, remaining)
        key = self._key(ref)
        kept = self._kept(key)
        result = None
        if kept.is_file():
            earlier = CandidateResult.model_validate_json(kept.read_text())
            result = CandidateResult(candidate=ref, verdict=earlier.verdict)
            self.log(f"{ref.name}: the same candidate was checked in this run already")
        if result is None:
            result = evaluate(
                self.task_dir,
                ref,
                self.device_env,
                timeout_s,
                self.samples,
                str(self.store.check_dir(_dir_name(ref.name))),
                str(self._cache_dir(ref, key)),
                str(self._baseline_cache),
            )
            if result.verdict.status is not Status.HARNESS_ERROR:
                write_json(kept, result)
        result = judgement.ruled(result)  # the lane's language rule, on the record's verdict
        count = self.store.save_candidate(result)
        v = result.verdict
        if v.passed and v.speedup is not None and ref.mode != "baseline":
            self.best = max(self.best or 0.0, v.speedup)
        self.store.progress(evaluated=count, best_speedup=self.best)
        speed = f" {v.speedup:.3f}x" if v.speedup is not None else ""
        why = f" ({v.reason})" if v.reason else ""
        self.log(f"checked {ref.name}: {v.status.value}{speed}{why}")
        return result
