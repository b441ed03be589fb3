"""Freezing on a leased device, in a process of its own.

The baseline measured at freeze time is the denominator of every speedup, so it is taken the
way candidates are timed: in a fresh process (not beside the orchestrator's threads and event
loops) on a device no lane is using. Plain Python, no Prefect: `bakeoff run` freezes before it
starts Prefect, so a kernel that does not freeze is refused with one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from scripts import manifest
from scripts.errors import BadInput
from tasks.gpu_pool import DevicePool
from tasks.results import PoolConfig

ROOT = Path(__file__).resolve().parent.parent
ERROR_PREFIX = "bakeoff freeze: error: "
# What this process froze or found frozen: (input, task directory) -> (the input's files, the
# task's manifest). `bakeoff run` freezes before its flow starts, and the flow's freeze phase
# then asks again: without this it imported the input once more in a sandboxed interpreter
# to compare (9.7 s of a 202 s bake-off on an H200 host, eb6e84f record).
_FROZEN_HERE: dict[tuple[str, str], tuple[str, str]] = {}


def _state(kernel_path: Path, out: Path) -> tuple[str, str]:
    if kernel_path.is_dir():
        files = json.dumps(manifest.build(kernel_path), sort_keys=True).encode()
    else:
        files = kernel_path.read_bytes()
    task = (out / manifest.MANIFEST).read_bytes()
    return hashlib.sha256(files).hexdigest(), hashlib.sha256(task).hexdigest()


def freeze_isolated(
    kernel_path: Path, out: Path, pool: PoolConfig | None = None, timeout_s: float = 1800.0
) -> Path:
    """Freeze `kernel_path` into `out`; an existing freeze of the same input is kept as it is."""
    kernel_path, out = Path(kernel_path).resolve(), Path(out).resolve()
    key = (str(kernel_path), str(out))
    if (out / manifest.MANIFEST).is_file():
        if _FROZEN_HERE.get(key) == _state(kernel_path, out):
            manifest.verify(out)  # unchanged since this process froze it from this input
            return out
        from scripts.freeze import freeze  # here: the first ask in a process goes to a subprocess

        freeze(kernel_path, out)  # verifies; refuses a different input
        _FROZEN_HERE[key] = _state(kernel_path, out)
        return out
    new_dirs = [p for p in [out.parent, *out.parent.parents] if not p.exists()]
    try:
        _freeze_in_subprocess(kernel_path, out, pool, timeout_s)
        _FROZEN_HERE[key] = _state(kernel_path, out)
        return out
    except BaseException:
        for d in new_dirs:  # deepest first: leave nothing behind that explains nothing
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
        raise


def _freeze_in_subprocess(kernel_path: Path, out: Path, pool, timeout_s: float) -> Path:
    with DevicePool.from_config(pool or PoolConfig()).lease(f"freeze {kernel_path.name}") as lease:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, **lease.env, "PYTHONPATH": path}
        proc = subprocess.run(
            [sys.executable, "-m", "flows.cli", "freeze", str(kernel_path), "--out", str(out)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    if proc.returncode == 0:
        return out
    lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
    if proc.returncode == 2 and lines[-1].startswith(ERROR_PREFIX):
        where, _, what = lines[-1][len(ERROR_PREFIX) :].partition(": ")
        raise BadInput(where, what)
    raise RuntimeError(f"freezing {kernel_path} failed: {lines[-1]}")
