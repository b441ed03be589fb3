"""TEMPORARY stand-in for Discover (the `backends` branch owns the real one).

It keeps the contract `discover(...) -> DiscoverPlan`: it checks the frozen baseline's own
sources once through `check_fn` (so Discover's measurement comes from the same harness as
every lane's) and plans an optimize lane for the input's language and an author lane for
every other known language. Replace at merge.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from tasks.backends import languages
from tasks.models import (
    BackendStatus,
    CandidateRef,
    CandidateResult,
    DiscoverPlan,
    PlanEntry,
)


def discover(
    task_dir: Path,
    workdir: Path,
    check_fn: Callable[[CandidateRef], CandidateResult],
    backends: list[str] | None = None,
) -> DiscoverPlan:
    task_dir, workdir = Path(task_dir), Path(workdir)
    spec = json.loads((task_dir / "spec.json").read_text())
    baseline = json.loads((task_dir / "baseline.json").read_text())
    source = workdir / "existing" / spec["language"]
    if not source.exists():
        shutil.copytree(task_dir / "baseline_src", source)
    measured = check_fn(
        CandidateRef(
            name=f"existing-{spec['language']}",
            language=spec["language"],
            mode="baseline",
            path=str(source),
            origin="temporary-discover",
        )
    )
    wanted = backends or languages()
    plan = [PlanEntry(language=spec["language"], mode="optimize", reason="the input's language")]
    plan += [
        PlanEntry(language=lang, mode="author", reason="no existing implementation found")
        for lang in wanted
        if lang != spec["language"]
    ]
    return DiscoverPlan(
        baseline_ms={k: v["median_ms"] for k, v in baseline["workloads"].items()},
        measured=[measured],
        backends=[BackendStatus(name=lang, language=lang, available=True) for lang in wanted],
        plan=plan,
    )
