"""What applying a run's winner writes, and the evidence its commit carries.

A source winner becomes a patch from the frozen baseline (`task/baseline_src/`) to the
candidate's files, laid onto the input's directory in its repository: changed and added files
only, so nothing is ever deleted. An env-tuned winner (TunableOp, aiter: mode `tuned-env`) is
not a source change: its deployable config goes in instead, under
`<input dir>/bakeoff-tuned/<candidate>/`: the tuned files it names, `env.sh` to source and
`env.json`, with the paths of the tuned files made relative to that directory.

An input that had no op spec was frozen from a staged copy holding the op.toml oracle_freezer
wrote (tasks/agents/freezer.py); the run records the input itself (`RUN_DIR/op_spec.json`) and
the winner goes onto the input's repository, never the staged copy's. That op.toml is left out
of the patch: the user never wrote it, it lies outside their repository, and it stays in the
run directory (`RUN_DIR/op.toml`), which the commit message names.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks.apply.git_branch import (
    BranchResult,
    FileChange,
    commit_on_new_branch,
    free_branch,
    open_repo,
)
from kernel_bakeoff.tasks.check.standing import baseline_stats
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.models.run import DiscoverOutcome, Report
from kernel_bakeoff.tasks.report.html import results_by_row
from kernel_bakeoff.tasks.run.input_identity import recorded

SKIPPED = ("__pycache__", ".pyc")
CONFIG_DIR = "bakeoff-tuned"


class ApplyResult(BranchResult):
    kind: str = ""  # "source-patch" | "env-config"
    candidate: str | None = None
    repo: str = ""


def _text_files(root: Path) -> dict[str, str]:
    if root.is_file():
        return {root.name: root.read_text()}
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(s in p.as_posix() for s in SKIPPED)
    }


def source_changes(task: FrozenTask, candidate: Path, prefix: str) -> list[FileChange]:
    base = _text_files(task.baseline_src)
    new = _text_files(candidate)
    if candidate.is_file():  # a single-file candidate replaces the entry's file
        new = {task.spec.entry.split(":")[0]: next(iter(new.values()))}
    return [
        FileChange(path=f"{prefix}{rel}", new=text, base=base.get(rel))
        for rel, text in new.items()
        if base.get(rel) != text
    ]


HERE_MARK = "\0HERE\0"


def _dq(value: str) -> str:
    """A value for inside double quotes in sh."""
    for ch in ("\\", '"', "$", "`"):
        value = value.replace(ch, "\\" + ch)
    return value


def config_changes(result: CandidateResult, prefix: str) -> list[FileChange]:
    ref = result.candidate
    where = f"{prefix}{CONFIG_DIR}/{ref.name}/"
    files = [Path(a) for a in ref.artifacts if Path(a).is_file()]
    changes = [FileChange(path=where + f.name, new=f.read_text()) for f in files]
    dirs = sorted({str(f.parent) for f in files}, key=len, reverse=True)

    def relative(value: str, here: str) -> str:
        for d in dirs:
            value = value.replace(d + "/", here + "/").replace(d, here)
        return value

    sh = ["# Source this file to deploy the tuned configuration kernel-bakeoff found.", ""]
    sh.append('HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"')
    sh += [f'export {k}="{_dq(relative(v, HERE_MARK))}"' for k, v in ref.env.items()]
    sh_text = "\n".join(sh).replace(HERE_MARK, "${HERE}")
    doc = {
        "candidate": ref.name,
        "backend": ref.origin,
        "env": {k: relative(v, ".") for k, v in ref.env.items()},
        "paths_relative_to": "this directory",
        "files": [f.name for f in files],
        "params": ref.params,
    }
    changes.append(FileChange(path=where + "env.sh", new=sh_text + "\n"))
    changes.append(FileChange(path=where + "env.json", new=json.dumps(doc, indent=1) + "\n"))
    return changes


SPEC_FILE = "op.toml"


def evidence(
    report: Report, task: FrozenTask, result: CandidateResult | None, spec_written: bool = False
) -> str:
    w = report.winner
    fp, base = task.fingerprint, task.baseline.workloads
    _, base_spread = baseline_stats(task)
    lines = [
        f"bakeoff: {report.kernel} -> {w.name} ({w.language}, {w.mode}), {w.speedup:.3f}x",
        "",
        f"The winner of the bake-off in {report.run_dir} (report.md and report.html there).",
        "Speedup over the frozen baseline per workload (median ms +/- interquartile range):",
    ]
    clocks = set()
    for v in result.verdict.workloads if result else []:
        if v.checked_only:
            continue  # a size checked for correctness only: listed below
        t, b = v.timing, base.get(v.workload)
        clocks.add(t.clock if t else "-")
        lines.append(
            f"  {v.workload}: {v.speedup:.3f}x  baseline {b.median_ms if b else 0:.4g} "
            f"+/- {(b.spread_ms if b else 0) or 0:.2g} ms ({100 * base_spread.get(v.workload, 0):.1f}%)"
            f" -> {t.median_ms:.4g} +/- {t.spread_ms:.2g} ms"
        )
    lines += [
        f"Overall {w.speedup:.3f}x (geometric mean); it had to beat {1 + (w.margin or 0):.3f}x "
        "(candidate + baseline spread).",
        f"Device: {fp.get('device_name')} ({fp.get('arch')}), clock {', '.join(sorted(clocks))}; "
        f"torch {fp.get('torch')}, triton {fp.get('triton')}, driver {fp.get('driver')}",
        f"Oracle: {report.oracle_sha256}",
        f"Run directory: {report.run_dir}",
        f"Candidate files: {w.path}",
    ]
    if result and result.verdict.sizes_checked:
        lines.append(f"Also right at sizes not listed: {', '.join(result.verdict.sizes_checked)}")
    if result and result.candidate.env:
        lines.append(
            "Environment: " + " ".join(f"{k}={v}" for k, v in result.candidate.env.items())
        )
    if spec_written:
        lines.append(
            f"Op spec: written by the oracle_freezer role for this run and not committed "
            f"here: {Path(report.run_dir) / SPEC_FILE}"
        )
    return "\n".join(lines) + "\n"


def apply_winner(
    report: Report,
    discovered: DiscoverOutcome | None = None,
    repo_path: str | None = None,
    branch: str | None = None,
) -> ApplyResult:

    w = report.winner
    if w is None:
        return ApplyResult(
            status="refused", reason="no winner: the original kernel is kept, nothing to apply"
        )

    # verified once: a winner is applied only against the oracle it was judged on
    task = report.frozen_task()
    result = results_by_row(report, discovered).get((w.source, w.name))
    written = recorded(Path(report.run_dir))  # the input had no spec: the model wrote one
    recorded_path = Path(written.input if written else report.kernel_path)
    if not recorded_path.is_absolute():  # a run from before runs recorded absolute paths
        if not repo_path:
            raise BadInput(
                str(recorded_path),
                "the run recorded a relative kernel path, which names no one repository; "
                "pass --repo",
            )
        recorded_path = Path(repo_path) / recorded_path
    kernel = recorded_path.resolve()
    repo = open_repo(Path(repo_path) if repo_path else kernel)
    root = Path(repo.working_tree_dir).resolve()
    src = kernel if kernel.is_dir() else kernel.parent
    if not src.is_relative_to(root):
        raise BadInput(str(kernel), f"the input is not inside the repository {root}")
    prefix = "" if src == root else src.relative_to(root).as_posix() + "/"
    tuned = w.mode == "tuned-env" and result is not None
    if tuned:
        changes = config_changes(result, prefix)
    else:
        changes = source_changes(task, Path(w.path), prefix)
    if written:
        changes = [c for c in changes if c.path != prefix + SPEC_FILE]
    name = free_branch(
        repo, branch or f"bakeoff/{report.kernel}-{report.oracle_sha256[:12]}", bool(branch)
    )
    done = commit_on_new_branch(repo, name, changes, evidence(report, task, result, bool(written)))
    return ApplyResult(
        **done.model_dump(),
        kind="env-config" if tuned else "source-patch",
        candidate=w.name,
        repo=str(root),
    )
