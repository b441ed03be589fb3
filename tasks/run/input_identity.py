"""An input's identity before it is frozen: whether it has an op spec of its own, the hash of
its sources, and what a run records of the spec Freeze read.

The run store keys a run directory by it and the freeze flow, the live view and Apply read it;
only writing a missing spec needs the agents (tasks/agents/freezer.py). Kept apart from them so
that the store does not import the agent room, nor the agent room the store through it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pydantic import BaseModel

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks.run.atomic_json import write_json

RECORD = "op_spec.json"  # in a run directory: where its input's spec came from


def needs_spec(path: Path) -> bool:
    """A directory that no input format reads (no op.toml, not a KernelBench .py, not a trace
    set): the case where oracle_freezer writes the spec."""
    from kernel_bakeoff.scripts.formats import (
        detect_format,  # here: brings torch; `bakeoff run` starts without it
    )

    path = Path(path)
    if not path.is_dir():
        return False
    try:
        detect_format(path)
    except BadInput:
        return True
    return False


def no_spec_here(path: Path) -> BadInput:
    return BadInput(
        str(path),
        "no op spec here (no op.toml, not a KernelBench problem, not a trace set): write "
        "op.toml, or set ANTHROPIC_API_KEY to have the oracle_freezer role write one",
    )


def sources_key(kernel_dir: Path) -> str:
    """A short hash of a directory's files: names its staged copy, and the run directory of an
    input that has no spec yet (tasks/run/directory.py), before the model has written one."""
    import hashlib

    files = manifest.build(Path(kernel_dir))
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:12]


class SpecSource(BaseModel):
    """What Freeze read for an input, as a run records it (`RUN_DIR/op_spec.json`)."""

    input: str  # the kernel path as given: the original, which a winner is applied to
    frozen_from: str  # the input itself, or the staged copy holding the op.toml the model wrote
    said: str = ""  # the line spec_for returned ("" when the input has a spec of its own)

    @property
    def written(self) -> bool:
        return Path(self.frozen_from) != Path(self.input)


class Frozen(BaseModel):
    """A frozen task as the flows hand it on: where it is, its oracle id, what it freezes."""

    task_dir: str
    oracle_sha256: str
    op: str
    language: str
    baseline_ms: dict[str, float]
    source: SpecSource  # what was frozen: the input, or its copy with the op.toml a model wrote

    @classmethod
    def read(cls, task_dir: Path, source: SpecSource) -> Frozen:
        """The frozen task at `task_dir`, its manifest verified (a forged id is refused)."""
        task = FrozenTask.open(task_dir)
        return cls(
            task_dir=str(task_dir),
            oracle_sha256=task.oracle_sha256,
            op=task.spec.name,
            language=task.spec.language.lower(),
            baseline_ms=task.baseline.medians(),
            source=source,
        )


def record_in(run_dir: Path, source: SpecSource) -> str:
    """Keep a written spec in the run directory (`op.toml`, `op_spec.json`); the line to say."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(source.frozen_from) / "op.toml", run_dir / "op.toml")
    write_json(run_dir / RECORD, source)
    return f"{source.said}; kept as {run_dir / 'op.toml'}"


def recorded(run_dir: Path) -> SpecSource | None:
    """The run's record of a spec oracle_freezer wrote for its input (None: the input had one)."""
    path = Path(run_dir) / RECORD
    return SpecSource.model_validate_json(path.read_text()) if path.is_file() else None
