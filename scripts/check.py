"""check: the verdict on one candidate against a frozen task directory.

The orchestrator side of the harness seam: it writes a JSON request, runs the trusted judge
(`python -m kernel_bakeoff.scripts.judge`) as a subprocess under a deadline with credentials removed from its
environment, and validates the JSON verdict it writes. A bad candidate is a verdict, never an
exception; an unusable task directory or a missing candidate is `BadInput`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import sys
import tempfile
import time
from pathlib import Path

from pydantic import ValidationError

from kernel_bakeoff.scripts import box, forkserver, isolation, manifest, protocol, sandbox
from kernel_bakeoff.scripts.arch import cpu_llc_bytes
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.judge import CHILD_PGID, HARNESS_DIR, TEST_COMPILE_CACHE_VAR
from kernel_bakeoff.scripts.verdict import Status, Verdict

_HARNESS_AT_IMPORT = manifest.build(HARNESS_DIR)
_FIRST_SEEN: dict[str, str] = {}  # task directory -> sha256 of its MANIFEST.json, this process
SAMPLES_VAR = "BAKEOFF_SAMPLES"
MIN_DEFAULT_SAMPLES = 5  # the reviewer trusts no timing of fewer (tasks/agents/without_model.py)


def default_samples() -> int | None:
    """Timed samples per workload for a check or freeze that names none: BAKEOFF_SAMPLES, else
    None (protocol.DEFAULT_SAMPLES). A slow host may take fewer; BadInput for a value that is
    not a whole number of at least MIN_DEFAULT_SAMPLES."""
    raw = os.environ.get(SAMPLES_VAR, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < MIN_DEFAULT_SAMPLES:
        raise BadInput(
            SAMPLES_VAR, f"must be a whole number of at least {MIN_DEFAULT_SAMPLES}, got {raw!r}"
        )
    return int(raw)


def check(
    task_dir: Path,
    candidate: Path,
    *,
    candidate_env: dict[str, str] | None = None,
    device_env: dict[str, str] | None = None,
    timeout_s: float = 300.0,
    samples: int | None = None,
    workdir: Path | None = None,
    trials: int | None = None,
    warmup: int | None = None,
    side_by_side: bool = True,
    cache_dir: Path | None = None,
    baseline_cache_dir: Path | None = None,
    warm: bool = True,
    quick: bool = False,
) -> Verdict:
    """Check and time `candidate` (a file or directory in the op's format) against `task_dir`.

    `candidate_env` is applied to the candidate's process only (after credentials are removed);
    `device_env` (e.g. CUDA_VISIBLE_DEVICES) pins the judge and the candidate to one device.
    `timeout_s` bounds the candidate's process; `workdir` keeps the request, verdict and logs
    (a temporary directory, removed afterwards, when None). With `side_by_side` (the default)
    the frozen baseline is timed again in this check, just before the candidate, and the
    speedup is the ratio of the two. `cache_dir` holds the compilers' caches of this candidate
    (only ever give one candidate's source the same directory); `baseline_cache_dir` those of
    the frozen baseline's run beside it (one per frozen task); `warm=False` starts fresh
    interpreters instead of forking warm ones. `quick`: correctness only, at the small sizes,
    nothing timed (`JudgeRequest.quick`): the verdict has no speedup and wins nothing."""
    task_dir, candidate = _usable(task_dir, candidate)
    request = _request(
        task_dir,
        str(candidate.resolve()),
        freezing=False,
        candidate_env=candidate_env,
        timeout_s=timeout_s,
        samples=samples,
        trials=trials,
        warmup=warmup,
        side_by_side=side_by_side,
        cache_dir=str(Path(cache_dir).resolve()) if cache_dir else None,
        baseline_cache_dir=str(Path(baseline_cache_dir).resolve()) if baseline_cache_dir else None,
        quick=quick or None,
    )
    return _run_judge(request, device_env, workdir, warm)


def precompile(
    task_dir: Path,
    candidate: Path,
    *,
    cache_dir: Path,
    candidate_env: dict[str, str] | None = None,
    device_env: dict[str, str] | None = None,
    timeout_s: float = 300.0,
    workdir: Path | None = None,
) -> protocol.Precompiled:
    """Run `candidate` through the calls that compile in a check (each workload's first calls)
    and nothing else, in the same sandbox, so its compilers' caches in `cache_dir` are full when
    `check` is given the same `cache_dir`. Several may run at once on one device (compiling is
    the host's work), never beside a check: a check wants the device to itself. Whatever
    happens is only advice (a failure of the harness reads HARNESS_ERROR): the check that
    follows judges the candidate from scratch."""
    task_dir, candidate = _usable(task_dir, candidate)
    request = _request(
        task_dir,
        str(candidate.resolve()),
        freezing=False,
        candidate_env=candidate_env,
        timeout_s=timeout_s,
        cache_dir=str(Path(cache_dir).resolve()),
        precompile=True,
    )
    return _run_judge(request, device_env, workdir)


def _usable(task_dir: Path, candidate: Path) -> tuple[Path, Path]:
    """The frozen task, verified and unchanged since this process first used it, and the
    candidate, which must exist; BadInput otherwise."""
    task_dir, candidate = Path(task_dir), Path(candidate)
    if not task_dir.is_dir():
        raise BadInput(str(task_dir), "task directory does not exist")
    manifest.verify(task_dir)
    _same_as_first_seen(task_dir)
    if not candidate.exists():
        raise BadInput(str(candidate), "candidate does not exist")
    return task_dir, candidate


def judge_baseline(
    staging: Path,
    *,
    timeout_s: float = 300.0,
    baseline_cache_dir: Path | None = None,
    **options,
) -> Verdict:
    """Check and time the frozen baseline of a staging directory (freeze, before its manifest):
    the same path as every candidate, so the baseline's timing is the one denominator.
    `baseline_cache_dir` keeps its compilers' caches (the run's, which its checks use)."""
    cache = str(Path(baseline_cache_dir).resolve()) if baseline_cache_dir else None
    request = _request(
        Path(staging),
        None,
        freezing=True,
        candidate_env=None,
        timeout_s=timeout_s,
        baseline_cache_dir=cache,
        **options,
    )
    return _run_judge(request, None, None)


def _request(task_dir: Path, candidate, *, freezing, candidate_env, timeout_s, **counts):
    given = {k: v for k, v in counts.items() if v is not None}
    cpu_llc_bytes()  # the judge's children read it: a bad value is said here, once
    if "samples" not in given and (samples := default_samples()) is not None:
        given["samples"] = samples
    return protocol.JudgeRequest(
        task_dir=str(task_dir.resolve()),
        candidate=candidate,
        freezing=freezing,
        candidate_env=dict(candidate_env or {}),
        timeout_s=timeout_s,
        **given,
    )


def _same_as_first_seen(task_dir: Path) -> None:
    """Refuse a task whose manifest was rewritten (consistently) since this process first saw it."""
    key = str(task_dir.resolve())
    digest = hashlib.sha256((task_dir / manifest.MANIFEST).read_bytes()).hexdigest()
    if _FIRST_SEEN.setdefault(key, digest) != digest:
        raise BadInput(
            str(task_dir / manifest.MANIFEST),
            "the manifest changed since this process first used the task: the oracle was rewritten",
        )


def warm_up(device_env: dict[str, str] | None) -> None:
    """Start the warm server that checks on this device will fork from, without waiting for it:
    its import of torch and the compiler (seconds: docs/studies/h200_figures.md) overlaps
    whatever the caller does next instead of the first check's time."""
    forkserver.server_for(sandbox.judge_env(device_env), compiler=True)


def _run_judge(
    request: protocol.JudgeRequest, device_env, workdir: Path | None, warm: bool = True
) -> Verdict | protocol.Precompiled:
    if manifest.build(HARNESS_DIR) != _HARNESS_AT_IMPORT:
        raise BadInput(
            str(HARNESS_DIR), "the harness's sources changed since this process loaded them"
        )
    if refused := isolation.refusal():  # untrusted code never runs unboxed by accident
        raise BadInput("sandbox", refused)
    sandbox.protect_self()  # candidates must not read this process's memory or environment
    own = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="bakeoff-check-")) if own else Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    made: list[Path] = []
    try:
        request_path, verdict_path = workdir / "request.json", workdir / "verdict.json"
        sandbox.write_new(request_path, request.model_dump_json())
        verdict_path.unlink(missing_ok=True)
        finished = _start_judge(
            request,
            [str(request_path), str(verdict_path)],
            env=sandbox.judge_env(device_env),
            cwd=workdir,
            log_path=workdir / "judge.log",
            timeout_s=_judge_deadline(request),
            warm=warm,
            box=_box(request, workdir, made),
        )
        if finished.timed_out or finished.returncode != 0:
            _kill_candidate_group(workdir)
        verdict = _read_verdict(request, verdict_path, finished, workdir / "judge.log")
    finally:
        _unmake_empty(made)
        if own:
            _remove(workdir)
    if isinstance(verdict, protocol.Precompiled):
        return verdict
    elapsed = time.monotonic() - started
    secrets = sandbox.secret_values(os.environ)
    return verdict.model_copy(
        update={
            "harness_seconds": max(0.0, elapsed - (verdict.candidate_seconds or 0.0)),
            "output_tail": sandbox.redact(verdict.output_tail, secrets),
            "reason": sandbox.redact(verdict.reason, secrets) if verdict.reason else None,
        }
    )


def _box(request: protocol.JudgeRequest, workdir: Path, made: list[Path]) -> dict:
    """The check's box (scripts/box.py): the frozen task and the candidate read-only; the
    check's work directory (request, verdict, scratch) and the compilers' caches writable.
    Nothing else of the run directory (other checks, receipts, `checked/`) is in it."""
    read = [request.task_dir, *([request.candidate] if request.candidate else [])]
    write = [workdir]
    for cache in (request.cache_dir, request.baseline_cache_dir):
        if cache:
            made.extend(
                reversed([p for p in (Path(cache), *Path(cache).parents) if not p.exists()])
            )
            Path(cache).mkdir(parents=True, exist_ok=True)  # a mount point must exist
            write.append(cache)
    if shared := os.environ.get(TEST_COMPILE_CACHE_VAR):  # the test suite's one cache (judge.py)
        write.append(shared)
    return box.plan(read=read, write=write, cwd=str(workdir))


def _unmake_empty(made: list[Path]) -> None:
    """Cache directories made only to be bound into a box (`_box`), left empty: removed."""
    while made:
        try:
            made.pop().rmdir()
        except OSError:
            pass


def _start_judge(
    request: protocol.JudgeRequest, argv: list[str], warm: bool = True, **how
) -> sandbox.Finished:
    """Run the judge: forked by a warm server (`scripts.forkserver`) when one is usable, else
    as a fresh interpreter. A candidate's check (or precompile) forks from a server that has
    imported the compiler too; the freeze's check of the baseline from one that has not (it
    shares the server of the freeze's other sandboxed steps, which compile nothing)."""
    compiler = not request.freezing
    return forkserver.run_module(
        "kernel_bakeoff.scripts.judge", argv, compiler=compiler, warm=warm, **how
    )


def _kill_candidate_group(workdir: Path) -> None:
    """The judge ended abnormally: its candidate's process group may still be running. The
    recorded group is killed only if its leader is still a candidate's process."""
    try:
        pgid = int((workdir / CHILD_PGID).read_text())
        leader = Path(f"/proc/{pgid}/cmdline").read_bytes().split(b"\0")
        started_as = {
            b"kernel_bakeoff.scripts.child",
            b"kernel_bakeoff.scripts.forkserver",
        }  # forked ones keep the server's
        if (
            pgid > 1
            and pgid != os.getpgrp()
            and pgid not in forkserver.server_pids()
            and started_as & set(leader)
        ):
            os.killpg(pgid, signal.SIGKILL)
    except (OSError, ValueError):
        pass


def _judge_deadline(request: protocol.JudgeRequest) -> float:
    """Room for the baseline's run beside the candidate (twice when it drifted), the candidate's
    deadline, and the judge's own work (reference, comparisons)."""
    return 3 * request.timeout_s + 120


def _read_verdict(request, verdict_path: Path, finished, log_path: Path):
    """The judge's answer: a Verdict (a Precompiled for a precompile request)."""
    model = protocol.Precompiled if request.precompile else Verdict
    if finished.returncode == 0 and not finished.timed_out and verdict_path.is_file():
        data = json.loads(verdict_path.read_text())
        if "bad_input" in data:
            raise BadInput(*data["bad_input"])
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            problem = f"its verdict does not validate: {str(exc).splitlines()[0]}"
    elif finished.timed_out:
        problem = f"it did not finish within {_judge_deadline(request):g} s"
    else:
        problem = f"it {finished.how} without a verdict"
    log = Path(log_path).read_text(errors="replace")[-2000:] if Path(log_path).exists() else ""
    if blamed := _blame(request, finished):
        if request.precompile:
            return protocol.Precompiled(seconds=0.0, status=Status.CRASHED, reason=blamed)
        return Verdict(
            candidate=request.candidate or "baseline",
            oracle_sha256="",
            device="unknown",
            status=Status.CRASHED,
            reason=blamed,
            output_tail=_candidate_tail(Path(log_path).parent) or log,
        )
    if request.precompile:
        reason = f"the harness failed: {problem}"
        return protocol.Precompiled(seconds=0.0, status=Status.HARNESS_ERROR, reason=reason)
    return Verdict(
        candidate=request.candidate or "baseline",
        oracle_sha256="",
        device="unknown",
        status=Status.HARNESS_ERROR,
        reason=f"the harness failed: {problem}",
        output_tail=log,
    )


def _candidate_tail(workdir: Path, chars: int = 2000) -> str:
    """The end of the output of the check's last candidate process, read without following
    a link the candidate may have planted there (its scratch directory was its own)."""
    logs = []
    for scratch in workdir.glob("scratch-*"):
        if scratch.is_dir() and not scratch.is_symlink():
            try:
                fd = os.open(scratch / "output.log", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            logs.append((os.fstat(fd).st_mtime, fd))
    if not logs:
        return ""
    logs.sort()
    for _, fd in logs[:-1]:
        os.close(fd)
    with os.fdopen(logs[-1][1], "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        f.seek(max(0, os.fstat(f.fileno()).st_size - 4 * chars))
        return f.read().decode(errors="replace")[-chars:]


def _blame(request: protocol.JudgeRequest, finished) -> str | None:
    """The candidate's failure when the check's box ended without a verdict for a reason only
    untrusted code can cause: a bound of the box passed (its trusted relay's reserved status),
    or the judge killed by a signal before the deadline (nothing trusted sends one then; the
    candidate shares the judge's box and uid, so it can). None: the harness's own failure."""
    if finished.timed_out or request.freezing or not isolation.wanted():
        return None
    code = finished.returncode or 0
    if why := box.reason(code):
        return f"the candidate's process tree {why}"
    if code < 0:
        return (
            f"the check's processes were {sandbox.describe_exit(code).removeprefix('was ')} "
            "while the candidate ran in their box (booked on the candidate)"
        )
    return None


def _remove(path: Path) -> None:
    """Remove a work directory, including files a candidate made read-only."""

    def _chmod_and_retry(func, p, _exc):
        for q in (os.path.dirname(p), p):
            try:
                os.chmod(q, 0o700)
            except OSError:
                pass
        func(p)

    handler = "onexc" if sys.version_info >= (3, 12) else "onerror"
    shutil.rmtree(path, **{handler: _chmod_and_retry})
