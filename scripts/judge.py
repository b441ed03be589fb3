"""The judge: one trusted process per check, `python -m kernel_bakeoff.scripts.judge REQUEST.json VERDICT.json`.

It draws fresh seeds, runs the candidate in a child process (`scripts.child`) in its own session,
scratch directory and scrubbed environment under a deadline, kills the child and everything it
started, and only then computes the reference in this process and compares. It re-hashes the
oracle and the harness sources to catch a candidate that edited them, and writes the verdict
(atomically, after every candidate process is gone). What the child reports is untrusted: it can
make a verdict worse, never better; the timing it reports is cross-checked against this process's
own wall clock and against the physical floor of the device.

Limits (same user, same machine): a candidate can read what the orchestrator's user can read and
can forge its own process's reports; what it cannot forge is bounded by the full checks on the
trial outputs, the projections of the timed outputs, the wall clock here and the physical floor.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import stat
import sys
import tempfile
import time
from pathlib import Path

from kernel_bakeoff.scripts import (
    arch,
    box,
    isolation,
    judge_clock,
    launches,
    manifest,
    protocol,
    sandbox,
    untrusted_file,
)
from kernel_bakeoff.scripts.baseline import BaselineWorkload, FrozenBaseline
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.fingerprint import device_kind
from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.scripts.timing import wall_problem
from kernel_bakeoff.scripts.verdict import Status, TorchWork, Verdict, WorkloadVerdict, geomean

REPO_ROOT = Path(__file__).resolve().parent.parent
HARNESS_DIR = Path(__file__).resolve().parent
TAIL_CHARS = 2000
CHILD_PGID = "candidate.pgid"
RESULTS_LIMIT = 64 * 2**20  # one results file (JSON); a larger one is garbled
TEST_COMPILE_CACHE_VAR = "BAKEOFF_TEST_COMPILE_CACHE"  # tests only: see child_env
_rng = random.SystemRandom()
# Variables that torch, Triton, the device runtimes or the interpreter may read when imported.
READ_AT_IMPORT = (
    "PYTORCH_",
    "TORCH",
    "CUDA",
    "CUBLAS",
    "NVIDIA_",
    "HIP",
    "ROCM",
    "ROCR_",
    "HSA_",
    "AMD_",
    "OMP_",
    "KMP_",
    "GOMP_",
    "MKL_",
    "TRITON_",
    "LD_",
    "PYTHON",
    "NCCL_",
)


def fresh_seed() -> int:
    return _rng.getrandbits(63)


def snapshot(task_dir: Path) -> dict[str, dict[str, str]]:
    """Hashes of the oracle's files (manifest included) and of the harness's sources."""
    oracle = manifest.build(task_dir)
    mpath = task_dir / manifest.MANIFEST
    if mpath.is_file():
        oracle[manifest.MANIFEST] = hashlib.sha256(mpath.read_bytes()).hexdigest()
    return {"oracle": oracle, "harness": manifest.build(HARNESS_DIR)}


def tampering(before: dict, after: dict) -> str | None:
    for part, label in (("oracle", "the frozen oracle"), ("harness", "the harness's sources")):
        old, new = before[part], after[part]
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        if changed:
            return f"the candidate changed {label}: {', '.join(changed[:3])}"
    return None


def _reads_at_import(env: dict[str, str]) -> bool:
    return any(name.upper().startswith(READ_AT_IMPORT) for name in env)


def child_env(
    scratch: Path, candidate_env: dict[str, str], cache_dir: str | None = None
) -> dict[str, str]:
    """The candidate's environment: scrubbed, its own home and temporary directory, and the
    compilers' caches in its scratch directory, or in `cache_dir` (kept for this candidate's
    source alone by the orchestrator, so a candidate checked again does not compile again)."""
    cache = Path(cache_dir) if cache_dir else scratch / "cache"
    env = sandbox.scrub_env(os.environ)
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    paths = list(dict.fromkeys(paths))
    env.update(
        HOME=str(scratch / "home"),
        TMPDIR=str(scratch / "tmp"),
        XDG_CACHE_HOME=str(cache),
        TRITON_CACHE_DIR=str(cache / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"),
        PYTHONPATH=os.pathsep.join(paths),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
    )
    if shared := os.environ.get(TEST_COMPILE_CACHE_VAR):
        # Set by the test suite alone (tests/conftest.py): Inductor's and Triton's caches (keyed
        # by what they compile, written atomically) shared by all its checks, so a graph compiles
        # once a session, not once a bake-off. A run keeps each candidate's caches its own.
        env.update(
            TRITON_CACHE_DIR=str(Path(shared) / "triton"),
            TORCHINDUCTOR_CACHE_DIR=str(Path(shared) / "inductor"),
        )
    env.update(candidate_env)
    return env


def child_box(task: Path, candidate: str | None, scratch: Path, cache: str | None) -> dict:
    """The box of one process the judge runs (a candidate's, or the frozen baseline's), inside
    the judge's own: the frozen task and the candidate's source read-only, and writable only
    its scratch directory and its own compilers' cache. The judge's files (the request with
    every seed, the verdict it writes, other processes' scratch) and the baseline's cache when
    the candidate runs are not in it, and it has PID, network and user namespaces of its own,
    so it can neither see nor signal the judge."""
    write = [scratch, *([cache] if cache else [])]
    if shared := os.environ.get(TEST_COMPILE_CACHE_VAR):  # the test suite's one cache only
        write.append(shared)
    read = [task, *([candidate] if candidate else [])]
    # Memory is watched by the check box's relay, which (as root) reads each process's
    # proportional share; this box's relay, the judge's uid, could only add up forks' shared
    # pages once per process. Processes and scratch are bounded in both.
    outer = box.Bounds.from_env()
    bounds = box.Bounds(memory_bytes=2**62, procs=outer.procs, scratch_bytes=outer.scratch_bytes)
    return box.plan(read=read, write=write, cwd=str(scratch / "work"), nested=True, bounds=bounds)


def tail(path: Path, chars: int = TAIL_CHARS) -> str:
    """The end of a log the candidate's process wrote to (never through a link it planted)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            return ""
        f.seek(max(0, info.st_size - 4 * chars))
        return f.read(4 * chars).decode(errors="replace")[-chars:]


def last_started(markers, count: int) -> int:
    """The workload the child said it started last (0 if it said nothing sensible)."""
    last = 0
    for line, _ in markers:
        parts = line.split()
        if len(parts) == 2 and parts[0] == "start" and parts[1].isdigit() and int(parts[1]) < count:
            last = int(parts[1])
    return last


class Results:
    """What the child left in its results directory, validated; garbled files are named."""

    def __init__(self, root: Path, count: int, finished=None):
        self.root = root
        self.finished = finished  # how the process ended, its channel's lines and the deals
        self.hello = self._read(protocol.HELLO, protocol.ChildHello)
        self.fatal = self._read(protocol.FATAL, protocol.ChildError)
        self.workloads = [
            self._read(protocol.workload_file(i), protocol.ChildWorkload) for i in range(count)
        ]

    def _read(self, name: str, model):
        path = self.root / name
        if not path.exists() and not path.is_symlink():
            return None
        try:
            return model.model_validate_json(untrusted_file.read_bytes(path, RESULTS_LIMIT))
        except untrusted_file.Unusable as exc:
            return f"{name} is unusable ({exc})"
        except ValueError as exc:
            return f"{name} is garbled ({str(exc).splitlines()[0]})"

    def candidate_seconds(self) -> float:
        total = self.hello.load_s if isinstance(self.hello, protocol.ChildHello) else 0.0
        return total + sum(
            w.candidate_s for w in self.workloads if isinstance(w, protocol.ChildWorkload)
        )


class Judge:
    def __init__(self, request: protocol.JudgeRequest, workdir: Path):
        self.req = request
        self.workdir = workdir
        self.task = Path(request.task_dir)
        if request.freezing:
            self.oracle = manifest.oracle_hash(manifest.build(self.task))
            self.baseline: dict[str, BaselineWorkload] = {}
        else:
            self.oracle = manifest.verify(self.task)
            self.baseline = FrozenBaseline.read(self.task).workloads
        self.full_spec = OpSpec.model_validate_json((self.task / "spec.json").read_text())
        # A quick check judges only the small workloads, all as correctness-only sizes; the
        # child still gets the whole (valid) spec and runs only the workloads it is seeded for.
        self.spec = quick_spec(self.full_spec) if request.quick else self.full_spec
        self.seeds = self._fresh_seeds()
        self.judged = False  # torch ran its ops here: the children after start fresh

    def _fresh_seeds(self) -> list[protocol.WorkloadSeeds]:
        request = self.req
        return [
            protocol.WorkloadSeeds(
                name=wl.name,
                # A size checked for correctness only (scripts/sizes.py): one trial.
                trial_seeds=[fresh_seed() for _ in range(request.trials if wl.timed else 1)],
                warmup_seed=fresh_seed(),
                sample_seeds=[fresh_seed() for _ in range(request.samples)],
                wall_seed=fresh_seed(),
                projection_seed=fresh_seed(),
            )
            for wl in self.spec.workloads
        ]

    def run(self) -> Verdict:
        """The check, once more with fresh seeds while its only fault is a median below what
        the judge's clock allows (`CLOCK_TRIES` in all): a loaded host lengthens an honest
        process's spans too, and a moment of it should not book a cheat. A forger's claim
        stays below the bound however often it runs; what any run reports is judged whole."""
        verdict = self._run_once()
        retried = []
        while len(retried) + 1 < judge_clock.CLOCK_TRIES and _only_the_clock(verdict):
            retried.append(verdict.reason)
            # fresh interpreters from here: judging ran torch ops in this process, and a child
            # forked after OpenMP's threads started can hang in its first parallel op (a
            # lane's honest copy sat after its hello until the check's deadline, twice, when
            # its lease set OMP_NUM_THREADS=2)
            self.judged = True
            self.seeds = self._fresh_seeds()
            verdict = self._run_once()
        if retried:
            verdict.harness_phases["clock_retries"] = float(len(retried))
            if _only_the_clock(verdict):
                verdict.reason += f" (in each of {len(retried) + 1} runs, with fresh inputs)"
        return verdict

    def _run_once(self) -> Verdict:
        before = snapshot(self.task)
        sandbox.protect_self()
        sandbox.become_subreaper()
        fork = self._can_fork()
        beside, clock = None, time.monotonic()
        phases = {}
        if self.req.side_by_side and not (self.req.freezing or self.req.quick):
            # The frozen baseline first, in a process of its own that is gone before the
            # candidate's starts: the candidate cannot reach it, and both see the same device.
            beside = self._run_child(None, timing_only=True, fork=fork)[1]
            if self._drifted(beside):  # once more: a moment's load should not flag a candidate
                again = time.monotonic()
                beside = self._run_child(None, timing_only=True, fork=fork)[1]
                phases["baseline_retime_s"] = time.monotonic() - again
            phases["baseline_beside_s"] = time.monotonic() - clock
        clock = time.monotonic()
        finished, results, output = self._run_child(self.req.candidate, fork=fork)
        phases["candidate_process_s"] = time.monotonic() - clock
        clock = time.monotonic()
        problem = tampering(before, snapshot(self.task))
        verdict = self.verdict(finished, results, problem, output, beside)
        phases["judging_s"] = time.monotonic() - clock
        verdict.harness_phases = phases
        for leftover in self.workdir.glob("scratch-*/results/*.bin"):
            leftover.unlink()
        return verdict

    def _drifted(self, beside: Results) -> bool:
        """Whether any workload of the baseline's run beside the candidate moved from its
        frozen figure beyond both spreads (a run that failed is judged later, not here)."""
        # torch, through scripts.compare: the judge imports it while the candidate runs (_preload)
        from kernel_bakeoff.scripts.verify import drifted

        for i, wl in enumerate(self.spec.workloads):
            record = _beside(beside, i)
            if wl.timed and not isinstance(record, str):
                if drifted(record.samples_ms, self.baseline.get(wl.name)):
                    return True
        return False

    def precompile(self) -> protocol.Precompiled:
        """The candidate's process through its first calls only (`JudgeRequest.precompile`),
        in the same sandbox as a check: what it compiles lands in its cache directory."""
        sandbox.protect_self()
        sandbox.become_subreaper()
        clock = time.monotonic()
        finished, results, _ = self._run_child(
            self.req.candidate, fork=self._can_fork(), precompile=True
        )
        seconds = time.monotonic() - clock
        failure = results.fatal
        if not isinstance(failure, protocol.ChildError):
            failure = next(
                (w.error for w in results.workloads if isinstance(w, protocol.ChildWorkload)),
                None,
            )
        if isinstance(failure, protocol.ChildError):
            return protocol.Precompiled(
                seconds=seconds, status=failure.status, reason=failure.reason
            )
        if finished.timed_out or not all(results.workloads):
            why = "timed out" if finished.timed_out else f"{finished.how} before its last call"
            return protocol.Precompiled(seconds=seconds, status=Status.CRASHED, reason=why)
        return protocol.Precompiled(seconds=seconds)

    def _run_child(
        self,
        candidate: str | None,
        *,
        fork: bool,
        timing_only: bool = False,
        precompile: bool = False,
    ):
        """Run one candidate's process (the frozen baseline's when `candidate` is None) to its
        end; `timing_only` skips the trials and the wall-clock blocks (nothing is judged from
        that run but its samples); `precompile` stops each workload after its first calls."""
        scratch = Path(tempfile.mkdtemp(prefix="scratch-", dir=self.workdir))
        for sub in ("home", "tmp", "work", "results", "cache"):
            (scratch / sub).mkdir()
        seeds = self.seeds
        if timing_only:
            seeds = [s.model_copy(update={"trial_seeds": []}) for s in seeds]
        child_request = protocol.ChildRequest(
            spec=self.full_spec,
            src_dir=str(self.task / "baseline_src"),
            candidate=candidate,
            results=str(scratch / "results"),
            warmup=self.req.warmup,
            wall_blocks=0 if timing_only else self.req.wall_blocks,
            workloads=[s.for_child() for s in seeds],
            precompile=precompile,
            checked_only=self.req.quick,
        )
        (scratch / "child.json").write_text(child_request.model_dump_json())
        env = self.req.candidate_env if candidate else {}
        cache = self.req.cache_dir if candidate else self.req.baseline_cache_dir
        child = sandbox.Child(
            [sys.executable, "-m", "kernel_bakeoff.scripts.child", str(scratch / "child.json")],
            env=child_env(scratch, env, cache),
            cwd=scratch / "work",
            log_path=scratch / "output.log",
            timeout_s=self.req.timeout_s,
            with_markers=True,
            answer=judge_clock.Dealer([s.sample_seeds for s in seeds]).answer,
            sweep=True,
            fork=fork and not (candidate and _reads_at_import(env)),
            box=child_box(self.task, candidate, scratch, cache),
        )
        (self.workdir / CHILD_PGID).unlink(missing_ok=True)
        if not isolation.inside():  # inside, pids are the namespace's: its end kills the child
            sandbox.write_new(self.workdir / CHILD_PGID, str(child.proc.pid))  # for check()
        if not (timing_only or precompile):
            _preload()  # import torch and the formats (if not forked warm) while it runs
        finished = child.wait()
        results = Results(scratch / "results", len(self.spec.workloads), finished)
        return finished, results, tail(scratch / "output.log")

    def _can_fork(self) -> bool:
        """Fork the candidates' processes from this one (skipping their interpreter start and
        torch import) when this judge was itself forked warm and has neither touched a device
        nor judged a run yet.
        A candidate whose environment sets what torch, Triton or their runtimes may have read
        on import (`READ_AT_IMPORT`) starts fresh instead."""
        if "kernel_bakeoff.scripts.child" not in sys.modules or self.judged:
            return False
        import torch

        return not torch.cuda.is_initialized()

    def verdict(
        self, finished, results: Results, tamper: str | None, output: str, beside=None
    ) -> Verdict:
        info = arch.detect()
        device = device_kind()
        label = "cpu" if info.vendor == "cpu" else f"{info.name} ({info.arch})"
        if tamper:
            verdicts = [self._failed(wl.name, Status.FLAGGED, tamper) for wl in self.spec.workloads]
        else:
            verdicts = self._judge_workloads(finished, results, device, info, beside)
        failed = [w for w in verdicts if w.status is not Status.PASSED]
        bad = failed[0] if failed else None
        reason = None
        if bad and len(failed) == len(verdicts) and len({w.reason for w in failed}) == 1:
            reason = bad.reason  # one cause for every workload (e.g. it did not load)
        elif bad:
            reason = f"workload {bad.workload!r}: {bad.reason}"
        speedups = [w.speedup for w in verdicts if not w.checked_only]
        return Verdict(
            candidate=self.req.candidate or "baseline",
            oracle_sha256=self.oracle,
            device=label,
            status=bad.status if bad else Status.PASSED,
            reason=reason,
            workloads=verdicts,
            speedup=geomean(speedups) if not bad and all(speedups) else None,
            output_tail=output,
            candidate_seconds=results.candidate_seconds(),
            flush_bytes=getattr(results.hello, "flush_bytes", None),
        )

    @staticmethod
    def _failed(name: str, status: Status, reason: str) -> WorkloadVerdict:
        return WorkloadVerdict(workload=name, status=status, reason=reason)

    def _no_result(self, finished, results: Results, index: int) -> tuple[Status, str]:
        """Why workload `index` has no result: the child's fatal report, a deadline or a crash."""
        if isinstance(results.fatal, protocol.ChildError):
            return results.fatal.status, results.fatal.reason
        current = last_started(finished.markers, len(self.seeds))
        if index > current:
            name = self.seeds[current].name
            status = Status.TIMEOUT if finished.timed_out else Status.CRASHED
            return status, f"not reached: the candidate's process ended in workload {name!r}"
        if finished.timed_out:
            return Status.TIMEOUT, f"did not finish within {self.req.timeout_s:g} s and was killed"
        if why := box.reason(finished.returncode or 0):  # its box's relay killed it
            return Status.CRASHED, f"the candidate's process tree {why}"
        if finished.returncode == box.EXIT_BROKEN and results.hello is None:
            return Status.HARNESS_ERROR, "the candidate's box could not be made"
        return Status.CRASHED, f"the candidate's process {finished.how} before reporting results"

    def _judge_workloads(self, finished, results: Results, device: str, info, beside) -> list:
        """`beside`: the frozen baseline's timing-only run in this check (None: compare with
        the figure taken at freeze)."""
        # torch, through scripts.compare: the judge imports it while the candidate runs (_preload)
        from kernel_bakeoff.scripts.reference import Reference, private_caches
        from kernel_bakeoff.scripts.verify import verify_workload

        names = [wl.name for wl in self.spec.workloads]
        if isinstance(results.hello, str) or isinstance(results.fatal, str):
            reason = results.hello if isinstance(results.hello, str) else results.fatal
            return [
                self._failed(n, Status.FLAGGED, f"its results were altered: {reason}")
                for n in names
            ]
        if results.hello is not None and results.hello.device != device:
            reason = f"the candidate's process ran on {results.hello.device}, the judge on {device}"
            return [self._failed(n, Status.CRASHED, reason) for n in names]
        reference = None
        verdicts = []
        count = len(self.spec.workloads)
        ran = launches.records(finished.markers, count)
        on_device = launches.records(finished.markers, count, kind="device")
        for i, wl in enumerate(self.spec.workloads):
            record = results.workloads[i]
            forged = next((r for r in (ran[i], on_device[i]) if isinstance(r, str)), None)
            if forged and isinstance(record, protocol.ChildWorkload):
                verdicts.append(self._failed(wl.name, Status.FLAGGED, forged))
                continue
            if isinstance(ran[i], dict) and on_device[i]:
                ran[i] = {**ran[i], "device": on_device[i]}
            if record is None:
                verdicts.append(self._failed(wl.name, *self._no_result(finished, results, i)))
            elif isinstance(record, str):
                verdicts.append(self._failed(wl.name, Status.FLAGGED, f"its results: {record}"))
            elif record.error is not None:
                failed = self._failed(wl.name, record.error.status, record.error.reason)
                verdicts.append(_spent(failed, record, ran[i]))
            else:
                if reference is None:
                    private_caches(self.workdir)
                    reference = Reference(self.spec, self.task / "baseline_src", device)
                base = _beside(beside, i) if beside is not None else None
                verdict = verify_workload(
                    self,
                    i,
                    wl,
                    record,
                    reference,
                    results.root,
                    finished,
                    info,
                    base,
                    beside.finished if beside is not None else None,
                )
                verdicts.append(_spent(verdict, record, ran[i]))
        return verdicts


def _only_the_clock(verdict: Verdict) -> bool:
    """Whether the judge's clocks are all that failed this verdict: its bound on the samples
    (scripts/verify.py) or the back-to-back blocks' wall clock (`timing.wall_problem`). A loaded
    host trips either for an honest process now and then (CI at 0f4c983: an honest copy of the
    baseline timed at 4.4 ms a call, its blocks seen at 16.0 ms); a cheat's work outside the
    timed region, or its forged samples, trip them in every run."""
    failed = [w for w in verdict.workloads if w.status is not Status.PASSED]
    return bool(failed) and all(
        w.status is Status.FLAGGED
        and w.timing is not None
        and (
            (w.timing.clock_least_ms is not None and w.timing.median_ms < w.timing.clock_least_ms)
            or (w.reason is not None and w.reason == wall_problem(w.timing))
        )
        for w in failed
    )


def quick_spec(spec: OpSpec) -> OpSpec:
    """The workloads of a quick check: the correctness-only sizes freeze added (small, odd
    shapes) and the smallest timed workload, every one untimed. A judge-side view only (a spec
    with nothing timed does not validate, and is never written)."""
    import math

    smallest = min(spec.timed_workloads, key=lambda w: math.prod(w.dims.values()))
    chosen = [w for w in spec.workloads if not w.timed or w is smallest]
    untimed = [w.model_copy(update={"timed": False}) for w in chosen]
    return spec.model_copy(update={"workloads": untimed})


def _spent(verdict: WorkloadVerdict, record: protocol.ChildWorkload, ran) -> WorkloadVerdict:
    """`verdict` with the seconds the candidate's process spent in that workload's calls, and
    what its checked calls ran: the Triton kernels launched, the compiled extension functions
    called, the torch work beside them (the child's record on the marker channel,
    scripts/launches.py; never its results files, which it could rewrite after)."""
    ran = ran if isinstance(ran, dict) else {}
    work = ran.get("work") if isinstance(ran.get("work"), dict) else {}
    update = {
        "candidate_seconds": record.candidate_s,
        "triton_kernels": sorted({str(k) for k in ran.get("triton", [])}),
        "extension_calls": sorted({str(k) for k in ran.get("ext", [])}),
        "torch_work": TorchWork.model_validate(work) if work else None,
        "device_us": _floats(ran.get("device")),
    }
    return verdict.model_copy(update=update)


def _floats(record) -> dict[str, float] | None:
    if not isinstance(record, dict):
        return None
    return {str(k): float(v) for k, v in record.items() if isinstance(v, (int, float))} or None


def _beside(beside: Results, index: int) -> protocol.ChildWorkload | str:
    """The baseline's run of workload `index` in this check, or why there is none."""
    if isinstance(beside.fatal, protocol.ChildError):
        return f"the frozen baseline did not load beside the candidate: {beside.fatal.reason}"
    record = beside.workloads[index]
    if record is None or isinstance(record, str):
        return "the frozen baseline's process ended without its timings"
    if record.error is not None:
        return f"the frozen baseline failed beside the candidate: {record.error.reason}"
    return record


def _preload() -> None:
    """Imports made while the candidate runs. Not the device context: creating one on the
    candidate's device while it is being timed would disturb its samples."""
    import torch  # noqa: F401

    import kernel_bakeoff.scripts.compare  # noqa: F401
    import kernel_bakeoff.scripts.formats  # noqa: F401
    import kernel_bakeoff.scripts.reference  # noqa: F401

    try:
        import triton.language  # noqa: F401
    except ImportError:
        pass


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    sandbox.write_new(tmp, text)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    request_path, verdict_path = Path(argv[0]), Path(argv[1])
    try:
        request = protocol.JudgeRequest.model_validate_json(request_path.read_text())
        judge = Judge(request, verdict_path.parent)
    except BadInput as exc:
        _write(verdict_path, json.dumps({"bad_input": [exc.where, exc.what]}))
        return 0
    try:
        answer = judge.precompile() if request.precompile else judge.run()
    except BadInput as exc:  # the reference itself failed: the oracle is unusable
        _write(verdict_path, json.dumps({"bad_input": [exc.where, exc.what]}))
        return 0
    _write(verdict_path, answer.model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
