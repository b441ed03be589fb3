"""Freeze: turn an input kernel into an immutable task directory (the oracle).

Layout of a task directory:
  baseline_src/      copy of the input kernel's sources
  spec.json          the op spec (inputs, workloads, tolerances)
  fingerprint.json   device, arch, driver, torch/triton versions
  baseline.json      smoke result and timing per workload: the one denominator of every speedup
  MANIFEST.json      sha256 of every file; `oracle_sha256` identifies the inputs (sources + spec)
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from scripts import manifest
from scripts.errors import BadInput
from scripts.fingerprint import device_kind, fingerprint
from scripts.formats import load_spec, module_for
from scripts.spec import OpSpec

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".git")


def _write_json(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def load_task(task_dir: Path) -> tuple[OpSpec, Path, dict]:
    """Verify a task directory and return (spec, baseline_src, baseline timings)."""
    task_dir = Path(task_dir)
    if not task_dir.is_dir():
        raise BadInput(str(task_dir), "task directory does not exist")
    manifest.verify(task_dir)
    spec = OpSpec.model_validate_json((task_dir / "spec.json").read_text())
    baseline = json.loads((task_dir / "baseline.json").read_text())
    return spec, task_dir / "baseline_src", baseline


def default_out(spec: OpSpec, root: Path = Path("runs/tasks")) -> Path:
    return root / spec.name


def freeze(
    kernel_path: Path,
    out: Path | None = None,
    measure=None,
    *,
    op: str | None = None,
    solution: str | None = None,
) -> Path:
    """Freeze `kernel_path`; return the task directory. Nothing is left behind on failure.

    `op` and `solution` pick the operator and expert baseline of a flashinfer-bench trace set.
    """
    kernel_path = Path(kernel_path)
    spec, src_dir = load_spec(kernel_path, op=op, solution=solution)
    out = Path(out) if out else default_out(spec)
    if out.exists():
        if (out / manifest.MANIFEST).is_file():
            manifest.verify(out)
            frozen = OpSpec.model_validate_json((out / "spec.json").read_text())
            if frozen == spec and _same_sources(src_dir, out / "baseline_src"):
                return out  # already frozen from the same input
        raise BadInput(
            str(out), "output directory exists and holds something else; pick another --out"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        shutil.copytree(src_dir, staging / "baseline_src", ignore=IGNORED)
        _write_json(staging / "spec.json", spec.model_dump(mode="json"))
        _write_json(staging / "fingerprint.json", fingerprint())
        measure = measure or _measure_in_process
        _write_json(staging / "baseline.json", measure(spec, staging))
        manifest.write(staging)
        staging.rename(out)
    except BaseException:
        _remove(staging)
        raise
    return out


def _measure_in_process(spec: OpSpec, task_dir: Path) -> dict:
    from scripts import measure

    device = device_kind()
    src = task_dir / "baseline_src"
    module_for(spec.format)  # fail early on an unknown format
    smoke = measure.smoke(spec, src, device)
    timing = measure.time_workloads(spec, src, device)
    return {"device": device, "workloads": {k: {**smoke[k], **timing[k]} for k in smoke}}


def _same_sources(a: Path, b: Path) -> bool:
    fa = {k: v for k, v in manifest.build(a).items()}
    fb = manifest.build(b)
    return fa == fb


def _remove(path: Path) -> None:
    def _chmod_and_retry(func, p, _exc):
        Path(p).chmod(0o700)
        func(p)

    shutil.rmtree(path, onerror=_chmod_and_retry)
