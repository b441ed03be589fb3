"""TEMPORARY stand-in for the harness's `check` (the `harness` branch owns the real one).

It keeps the contract the orchestration codes against, so the Prefect flows run end to end
before the harness merges: `check(task_dir, candidate, ...) -> Verdict`, the candidate in a
subprocess of its own session with a deadline, a verdict that is a status and never an
exception. It is judge-less: the child process that runs the candidate also writes the verdict,
which the real harness forbids. Replace this file with the harness branch's version at merge.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts import manifest
from scripts.verdict import Status, Timing, Verdict, WorkloadVerdict, geomean

ROOT = Path(__file__).resolve().parent.parent
KEEP_ENV = ("PATH", "LANG", "TRITON_INTERPRET", "LD_LIBRARY_PATH")


def check(
    task_dir: Path,
    candidate: Path,
    *,
    candidate_env: dict[str, str] | None = None,
    device_env: dict[str, str] | None = None,
    timeout_s: float = 300.0,
    samples: int | None = None,
    workdir: Path | None = None,
) -> Verdict:
    task_dir, candidate = Path(task_dir), Path(candidate)
    oracle = manifest.verify(task_dir)
    workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="check-"))
    workdir.mkdir(parents=True, exist_ok=True)
    request = workdir / "request.json"
    verdict_path = workdir / "verdict.json"
    verdict_path.unlink(missing_ok=True)
    request.write_text(
        json.dumps(
            {
                "task_dir": str(task_dir.resolve()),
                "candidate": str(candidate.resolve()),
                "samples": samples or 10,
                "verdict": str(verdict_path),
            }
        )
    )
    env = {k: os.environ[k] for k in KEEP_ENV if k in os.environ}
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env.update(HOME=str(workdir), PYTHONPATH=path, **(device_env or {}))
    env.update(candidate_env or {})
    log = workdir / "output.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "scripts.check", str(request)],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    tail = log.read_text(errors="replace")[-4000:]
    base = {"candidate": candidate.name, "oracle_sha256": oracle, "output_tail": tail}
    base["harness_seconds"] = time.monotonic() - started
    if timed_out:
        return Verdict(
            **base, device="?", status=Status.TIMEOUT, reason=f"no verdict within {timeout_s:g} s"
        )
    if verdict_path.is_file():
        return Verdict.model_validate_json(verdict_path.read_text()).model_copy(update=base)
    return Verdict(
        **base,
        device="?",
        status=Status.CRASHED,
        reason=f"exited with status {proc.returncode} before giving a verdict",
    )


def _timing(fn, inputs, samples: int, device: str) -> Timing:
    import torch

    for _ in range(2):
        fn(*inputs)
    times = []
    for _ in range(samples):
        if device != "cpu":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(*inputs)
        if device != "cpu":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return Timing(
        clock="host",
        sample_count=samples,
        median_ms=statistics.median(times),
        min_ms=min(times),
        max_ms=max(times),
        spread_ms=q[2] - q[0],
        samples_ms=times,
    )


def _judge_workload(spec, fmt, src, cand, ref, wl, samples, device, baseline) -> WorkloadVerdict:
    from scripts.measure import rel_error

    seed = random.randrange(1 << 30)
    try:
        expected = ref(*fmt.make_inputs(spec, src, wl, seed, device))
        got = cand(*fmt.make_inputs(spec, src, wl, seed, device))
    except Exception as exc:
        return WorkloadVerdict(
            workload=wl.name, status=Status.RUNTIME_ERROR, reason=f"{type(exc).__name__}: {exc}"
        )
    expected = list(expected) if isinstance(expected, (list, tuple)) else [expected]
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    worst, tol = 0.0, 0.0
    for o, r in zip(got, expected, strict=False):
        if tuple(o.shape) != tuple(r.shape):
            return WorkloadVerdict(
                workload=wl.name, status=Status.INCORRECT_SHAPE, reason=f"{o.shape} vs {r.shape}"
            )
        if o.dtype != r.dtype:
            return WorkloadVerdict(
                workload=wl.name, status=Status.INCORRECT_DTYPE, reason=f"{o.dtype} vs {r.dtype}"
            )
        tol = spec.tolerance_for(str(r.dtype).removeprefix("torch."))
        err = rel_error(o, r)
        worst = max(worst, err) if err == err else float("nan")
        if not (err <= tol):
            return WorkloadVerdict(
                workload=wl.name,
                status=Status.INCORRECT_NUMERICAL,
                reason=f"relative error {err:.3g} over tolerance {tol:.3g}",
                max_rel_error=err if err == err else None,
                tolerance=tol,
            )
    timing = _timing(cand, fmt.make_inputs(spec, src, wl, seed + 1, device), samples, device)
    base_ms = baseline["workloads"][wl.name]["median_ms"]
    return WorkloadVerdict(
        workload=wl.name,
        status=Status.PASSED,
        max_rel_error=worst,
        tolerance=tol,
        timing=timing,
        baseline_ms=base_ms,
        speedup=base_ms / timing.median_ms if timing.median_ms > 0 else None,
    )


def _child(request_path: Path) -> None:
    from scripts.fingerprint import device_kind
    from scripts.formats import module_for
    from scripts.freeze import load_task

    req = json.loads(Path(request_path).read_text())
    spec, src, baseline = load_task(Path(req["task_dir"]))
    fmt, device = module_for(spec.format), device_kind()
    common = {"candidate": Path(req["candidate"]).name, "oracle_sha256": "", "device": device}
    try:
        ref = fmt.load_callable(spec, src, spec.reference_entry, device)
        cand = fmt.load_callable(spec, src, spec.entry, device, candidate=Path(req["candidate"]))
    except Exception as exc:
        verdict = Verdict(
            **common, status=Status.COMPILE_ERROR, reason=f"{type(exc).__name__}: {exc}"
        )
    else:
        wls = [
            _judge_workload(spec, fmt, src, cand, ref, wl, req["samples"], device, baseline)
            for wl in spec.workloads
        ]
        bad = next((w for w in wls if w.status is not Status.PASSED), None)
        verdict = Verdict(
            **common,
            status=bad.status if bad else Status.PASSED,
            reason=f"workload {bad.workload}: {bad.reason}" if bad else None,
            workloads=wls,
            speedup=None if bad else geomean([w.speedup for w in wls]),
        )
    Path(req["verdict"]).write_text(verdict.model_dump_json())


if __name__ == "__main__":
    _child(Path(sys.argv[1]))
