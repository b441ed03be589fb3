"""A small in-process check_fn for tests of Discover and the search lanes.

It compares a candidate with the frozen reference on every workload and times it with a host
clock, returning the same CandidateResult the real harness's check_fn does. It does not isolate
the candidate and ignores CandidateRef.env: it stands in for the harness only where the
candidates are ones this project generated itself.
"""

from __future__ import annotations

import statistics
import time
import traceback
from pathlib import Path

from kernel_bakeoff.scripts.compare import rel_error
from kernel_bakeoff.scripts.formats import module_for
from kernel_bakeoff.scripts.freeze import load_task
from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict, geomean
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _fail(ref, oracle, status, reason):
    return CandidateResult(
        candidate=ref,
        verdict=Verdict(
            candidate=ref.path, oracle_sha256=oracle, device="cpu", status=status, reason=reason
        ),
    )


def make_check(task_dir: Path, samples: int = 3):
    task_dir = Path(task_dir)
    spec, src, baseline = load_task(task_dir)
    oracle = (task_dir / "MANIFEST.json").read_text()
    fmt = module_for(spec.format)
    ref_fn = fmt.load_callable(spec, src, spec.reference_entry, "cpu")
    calls: list[CandidateRef] = []

    def check(ref: CandidateRef) -> CandidateResult:
        calls.append(ref)
        try:
            fn = fmt.load_callable(spec, src, spec.entry, "cpu", candidate=Path(ref.path))
        except Exception as exc:
            return _fail(ref, oracle[:64], Status.COMPILE_ERROR, f"{type(exc).__name__}: {exc}")
        verdicts = []
        for wl in spec.workloads:
            inputs = fmt.make_inputs(spec, src, wl, 11, "cpu")
            expected = _as_list(ref_fn(*inputs))
            try:
                got = _as_list(fn(*fmt.make_inputs(spec, src, wl, 11, "cpu")))
                times = []
                for _ in range(samples):
                    t0 = time.perf_counter()
                    fn(*inputs)
                    times.append((time.perf_counter() - t0) * 1e3)
            except Exception:
                reason = traceback.format_exc(limit=2).strip().splitlines()[-1]
                return _fail(ref, oracle[:64], Status.RUNTIME_ERROR, reason)
            for o, r in zip(got, expected):
                if tuple(o.shape) != tuple(r.shape):
                    return _fail(
                        ref, oracle[:64], Status.INCORRECT_SHAPE, f"{o.shape} vs {r.shape}"
                    )
                err = rel_error(o, r)
                tol = spec.tolerance_for(str(r.dtype).removeprefix("torch."))
                if not err <= tol:
                    return _fail(
                        ref, oracle[:64], Status.INCORRECT_NUMERICAL, f"error {err:.3g} > {tol:g}"
                    )
            if not wl.timed:  # a size checked for correctness only
                verdicts.append(
                    WorkloadVerdict(workload=wl.name, status=Status.PASSED, checked_only=True)
                )
                continue
            med = statistics.median(times)
            base = baseline.workloads[wl.name].median_ms
            timing = Timing(
                clock="host",
                sample_count=samples,
                median_ms=med,
                min_ms=min(times),
                max_ms=max(times),
                spread_ms=max(times) - min(times),
                samples_ms=times,
            )
            verdicts.append(
                WorkloadVerdict(
                    workload=wl.name,
                    status=Status.PASSED,
                    timing=timing,
                    baseline_ms=base,
                    speedup=base / med,
                )
            )
        verdict = Verdict(
            candidate=ref.path,
            oracle_sha256=oracle[:64],
            device="cpu",
            status=Status.PASSED,
            workloads=verdicts,
            speedup=geomean([w.speedup for w in verdicts if not w.checked_only]),
        )
        return CandidateResult(candidate=ref, verdict=verdict)

    check.calls = calls
    return check
