"""`bakeoff apply RUN_DIR`: the run's winner onto a new branch of the original repository.

Exit 0 when a branch was made; 1 when nothing was applied (no winner, a dirty tree, a
conflict), with one line saying why; 2 for bad input."""

from __future__ import annotations

from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.apply.winner import ApplyResult, apply_winner
from kernel_bakeoff.tasks.report.html import load_run


def describe(done: ApplyResult) -> str:
    if done.status != "committed":
        return f"not applied ({done.status}): {done.reason}"
    what = "deployable config" if done.kind == "env-config" else "source patch"
    merged = f"; three-way merged: {', '.join(done.three_way)}" if done.three_way else ""
    return (
        f"applied {done.candidate} as a {what} on new branch {done.branch} "
        f"({done.commit[:12]}) of {done.repo}: {', '.join(done.files)}{merged}"
    )


def apply_run(run_dir: Path, repo: str | None, branch: str | None, as_json: bool) -> int:

    if not (Path(run_dir) / "report.json").is_file():
        raise BadInput(str(run_dir), "not a finished run directory (no report.json)")
    report, discovered = load_run(Path(run_dir))
    done = apply_winner(report, discovered, repo, branch)
    print(done.model_dump_json(indent=1) if as_json else describe(done))
    return 0 if done.status == "committed" else 1
