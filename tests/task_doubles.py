"""A FrozenTask read from a directory a test wrote by hand (a spec, a baseline and a fingerprint,
no manifest): what a reader that takes the opened object is handed in such a test."""

import json
from pathlib import Path

from kernel_bakeoff.scripts.baseline import FrozenBaseline
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.scripts.spec import OpSpec


def unverified(task_dir: Path, oracle: str = "0" * 64) -> FrozenTask:
    task_dir = Path(task_dir)
    return FrozenTask(
        task_dir=task_dir,
        oracle_sha256=oracle,
        spec=OpSpec.read(task_dir),
        baseline=FrozenBaseline.read(task_dir),
        fingerprint=json.loads((task_dir / "fingerprint.json").read_text()),
    )
