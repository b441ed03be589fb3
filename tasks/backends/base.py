"""What every backend shares: the frozen task it builds for, and how a candidate is laid out.

A candidate is a directory in the op's format: a wrapper file named like the entry's file (so the
harness finds the entry symbol in it) beside `frozen/`, a copy of the frozen sources the wrapper
loads by path. Nothing in a candidate points back into the task directory.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kernel_bakeoff.scripts import arch as arch_mod
from kernel_bakeoff.scripts.baseline import FrozenBaseline
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.models.plan import BackendStatus, CandidateRef

FROZEN_DIR = "frozen"
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


@dataclass
class BuildContext:
    """The frozen task a backend builds candidates for, and where it may write them."""

    task_dir: Path
    spec: OpSpec
    baseline_src: Path
    workdir: Path
    arch: arch_mod.ArchInfo
    oracle_sha256: str
    baseline: FrozenBaseline = field(default_factory=FrozenBaseline)

    @classmethod
    def load(
        cls, task: FrozenTask | Path, workdir: Path, arch: arch_mod.ArchInfo | None = None
    ) -> BuildContext:
        """For `task`, opened once by the caller (a lane, Discover), or its directory, opened
        and verified here."""
        task = task if isinstance(task, FrozenTask) else FrozenTask.open(task)
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        return cls(
            task_dir=task.task_dir,
            spec=task.spec,
            baseline_src=task.baseline_src,
            workdir=workdir,
            arch=arch or arch_mod.detect(),
            oracle_sha256=task.oracle_sha256,
            baseline=task.baseline,
        )

    @property
    def entry_file(self) -> str:
        return self.spec.entry.partition(":")[0]

    @property
    def entry_symbol(self) -> str:
        return self.spec.entry.partition(":")[2]

    @property
    def candidate_symbol(self) -> str:
        """The name the harness looks up in a candidate (KernelBench asks for `ModelNew`)."""
        return "ModelNew" if self.spec.format == "kernelbench" else self.entry_symbol

    def candidate_dir(self, name: str) -> Path:
        return self.workdir / "candidates" / safe_name(name)


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "candidate"


def write_candidate(ctx: BuildContext, name: str, wrapper_source: str, src: Path | None = None):
    """Lay out a candidate directory: the wrapper as the entry's file, the sources in frozen/."""
    out = ctx.candidate_dir(name)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copytree(src or ctx.baseline_src, out / FROZEN_DIR, ignore=_IGNORED)
    for p in (out / FROZEN_DIR).rglob("*"):  # the frozen copy is read-only; this one is ours
        p.chmod(p.stat().st_mode | 0o200)
    (out / FROZEN_DIR).chmod(0o755)
    (out / ctx.entry_file).write_text(wrapper_source)
    return out


class Backend:
    """One way of producing candidates for an op. Subclasses set the class attributes."""

    name: str = ""
    language: str = ""
    lane: bool = False  # True for languages that get a lane (a search space or an author)

    def unavailable_reason(self) -> str | None:
        """None when this box can run the backend, else why not (never raises)."""
        return None

    def is_available(self) -> bool:
        return self.unavailable_reason() is None

    def cannot_build(self, spec: OpSpec) -> str | None:
        """None when the backend has something to offer for this op, else why not."""
        return None

    def can_build(self, spec: OpSpec) -> bool:
        return self.cannot_build(spec) is None

    def status(self, spec: OpSpec | None = None) -> BackendStatus:
        reason = self.unavailable_reason()
        if reason is None and spec is not None:
            reason = self.cannot_build(spec)
        return BackendStatus(
            name=self.name, language=self.language, available=reason is None, reason=reason or ""
        )

    def candidates(self, ctx: BuildContext) -> list[CandidateRef]:
        """Candidates for Discover, written under ctx.workdir. Called only when available."""
        return []

    def nothing_reason(self, ctx: BuildContext) -> str | None:
        """Why `candidates` proposed nothing for this op, when the backend can say (else None)."""
        return None

    def implementation(self, ctx: BuildContext) -> str | None:
        """Where an editable implementation in this backend's language lives, if anywhere."""
        return None

    def tunable(self, ctx: BuildContext, source: Path | None = None):
        """A `tasks.search.space.Tunable` over this backend's configuration space, or None."""
        return None
