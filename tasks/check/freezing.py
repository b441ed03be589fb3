"""Freezing on a leased device, in a process of its own.

The baseline measured at freeze time is the denominator of every speedup, so it is taken the
way candidates are timed: in a fresh process (not beside the orchestrator's threads and event
loops) on a device no lane is using. Plain Python, no Prefect: `bakeoff run` freezes before it
starts Prefect, so a kernel that does not freeze is refused with one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.check.gpu_pool import DevicePool
from kernel_bakeoff.tasks.models.run import PoolConfig

ROOT = Path(__file__).resolve().parents[2]


def freeze_isolated(
    kernel_path: Path, out: Path, pool: PoolConfig | None = None, timeout_s: float = 1800.0
) -> Path:
    """Freeze `kernel_path` into `out`; an existing freeze of the same input is kept as it is."""
    kernel_path, out = Path(kernel_path).resolve(), Path(out).resolve()
    if (out / manifest.MANIFEST).is_file():  # a run resumed: asked once a run (flows/opening.py)
        from kernel_bakeoff.scripts.freeze import freeze  # here: a new freeze goes to a subprocess

        freeze(kernel_path, out)  # verifies; refuses a different input
        return out
    new_dirs = [p for p in [out.parent, *out.parent.parents] if not p.exists()]
    try:
        _freeze_in_subprocess(kernel_path, out, pool, timeout_s)
        return out
    except BaseException:
        for d in new_dirs:  # deepest first: leave nothing behind that explains nothing
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
        raise


def _freeze_in_subprocess(kernel_path: Path, out: Path, pool, timeout_s: float) -> Path:
    """The harness's own entry point (`python -m kernel_bakeoff.scripts.freeze`), in a fresh process for the
    reasons above; it answers bad input in a JSON file, read back here as BadInput."""
    with tempfile.TemporaryDirectory(prefix="bakeoff-freeze-") as tmp:
        answer = Path(tmp) / "answer.json"
        with DevicePool.from_config(pool or PoolConfig()).lease(
            f"freeze {kernel_path.name}"
        ) as lease:
            path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
            env = {**os.environ, **lease.env, "PYTHONPATH": path}
            argv = ["-m", "kernel_bakeoff.scripts.freeze", str(kernel_path), str(out), str(answer)]
            proc = subprocess.run(
                [sys.executable, *argv],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        found = json.loads(answer.read_text()) if answer.is_file() else {}
    if proc.returncode == 0 and "ok" in found:
        return out
    if proc.returncode == 0 and "bad_input" in found:
        raise BadInput(*found["bad_input"])
    lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
    raise RuntimeError(f"freezing {kernel_path} failed: {lines[-1]}")
