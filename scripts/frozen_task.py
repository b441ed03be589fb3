"""A frozen task opened once: its files verified against its manifest, its oracle id the one
those files give, its spec and frozen baseline read. What every reader of a frozen task is
handed, so that it is neither re-opened nor re-verified along the way."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.scripts.baseline import FrozenBaseline
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.spec import OpSpec


class FrozenTask(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_dir: Path
    oracle_sha256: str  # re-derived from the files as they were opened, not the recorded one
    spec: OpSpec
    baseline: FrozenBaseline
    fingerprint: dict  # fingerprint.json: the device and versions the baseline was timed on

    @property
    def baseline_src(self) -> Path:
        return self.task_dir / "baseline_src"

    @classmethod
    def open(cls, task_dir: Path | str, oracle: str | None = None) -> FrozenTask:
        """The frozen task at `task_dir`, verified; BadInput for a changed file or, when
        `oracle` is given, for a task that is not that oracle (a re-frozen directory a
        lane was not configured for)."""
        task_dir = Path(task_dir)
        if not task_dir.is_dir():
            raise BadInput(str(task_dir), "task directory does not exist")
        found = manifest.verify(task_dir)
        if oracle is not None and found != oracle:
            raise BadInput(
                str(task_dir),
                f"the frozen task is oracle {found[:12]}, not the {oracle[:12]} this run froze: "
                "it was frozen again since; start the run again",
            )
        spec = OpSpec.read(task_dir)
        return cls(
            task_dir=task_dir,
            oracle_sha256=found,
            spec=spec,
            baseline=FrozenBaseline.read(task_dir),
            fingerprint=json.loads((task_dir / "fingerprint.json").read_text()),
        )


def spec_and_baseline(task: FrozenTask | Path | str) -> tuple[OpSpec, FrozenBaseline]:
    """The spec and frozen baseline of a task opened once, or read from a directory as they
    are (unverified: a reader handed a path, as before the object, reads the files alone)."""
    if isinstance(task, FrozenTask):
        return task.spec, task.baseline
    return OpSpec.read(task), FrozenBaseline.read(Path(task))


def fingerprint_of(task: FrozenTask | Path | str) -> dict:
    if isinstance(task, FrozenTask):
        return task.fingerprint
    return json.loads((Path(task) / "fingerprint.json").read_text())
