"""TEMPORARY stand-in for the lane search (the `backends` branch owns the real one).

It keeps the contract `run_search(...) -> list[CandidateResult]` so lanes run end to end: it
re-proposes the frozen baseline's sources, first as they are and then under different thread
counts, and has every proposal checked through `check_fn`. It neither authors nor tunes
kernels; nothing outside this file relies on what it proposes.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from tasks.models import CandidateRef, CandidateResult

THREADS = (None, 1, 2, 4, 8, 16)


def run_search(
    task_dir: Path,
    language: str,
    mode: str,
    workdir: Path,
    check_fn: Callable[[CandidateRef], CandidateResult],
    *,
    budget_evals: int,
    budget_s: float,
    strategy: str = "auto",
    history_dir: Path | None = None,
) -> list[CandidateResult]:
    workdir = Path(workdir)
    source = workdir / "baseline_copy"
    if not source.exists():
        shutil.copytree(Path(task_dir) / "baseline_src", source)
        for p in [source, *source.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
    stop_at = time.monotonic() + budget_s
    results = []
    for i, threads in enumerate(THREADS[:budget_evals]):
        if time.monotonic() >= stop_at:
            break
        env = {} if threads is None else {"OMP_NUM_THREADS": str(threads)}
        name = f"{language}-{mode}-{i}" + (f"-t{threads}" if threads else "")
        ref = CandidateRef(
            name=name,
            language=language,
            mode=mode,
            path=str(source),
            env=env,
            origin="temporary-search",
            params={"threads": threads},
        )
        results.append(check_fn(ref))
    return results
