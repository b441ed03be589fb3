"""Freeze: turn an input kernel into an immutable task directory (the oracle).

Layout of a task directory:
  baseline_src/      copy of the input kernel's sources
  spec.json          the op spec (inputs, workloads, tolerances), with the sizes the user did
                     not list that the reference accepts, as correctness-only workloads
  fingerprint.json   device, arch, driver, torch/triton versions
  baseline.json      smoke result and timing per timed workload: the one denominator of every
                     speedup; `checked_only` holds the result at each correctness-only size
  MANIFEST.json      sha256 of every file; `oracle_sha256` identifies the inputs (sources + spec)

Frozen into a run directory (`RUN/task`, as `bakeoff run` does), the baseline's compilers keep
their caches beside it, in `RUN/compile-cache/<baseline_cache_key>/`: the freeze's own build of
a CUDA C++, Triton or torch.compile baseline is the one every check of the run then loads.

    python -m kernel_bakeoff.scripts.freeze KERNEL_PATH OUT ANSWER.json      (a freeze in a process of its own)
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from kernel_bakeoff.scripts import manifest, sizes, untrusted
from kernel_bakeoff.scripts.baseline import FrozenBaseline
from kernel_bakeoff.scripts.check import judge_baseline
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.fingerprint import device_kind, fingerprint
from kernel_bakeoff.scripts.formats import module_for
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.scripts.safe_paths import refuse_links
from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.scripts.untrusted import load_spec  # imports the input in the sandbox, not here
from kernel_bakeoff.scripts.verdict import Status

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".git")
RUN_TASK = "task"  # a task directory of this name sits in a run directory (runs/<op>-<hash>/)
CACHES = "compile-cache"  # beside it: the compilers' caches of the run, one per source


def baseline_cache_key(src_dir: Path) -> str:
    """The name of the frozen baseline's compiler cache: its sources and torch's version, what
    a build of them depends on. Freeze knows both before the task's manifest exists, so its
    own build lands where the run's checks look for it (tasks/check/evaluate.py)."""
    import torch

    files = json.dumps({"src": manifest.build(src_dir), "torch": torch.__version__}, sort_keys=True)
    return "baseline-" + hashlib.sha256(files.encode()).hexdigest()[:16]


def run_baseline_cache(task_dir: Path, src_dir: Path | None = None) -> Path | None:
    """The baseline's compiler cache of the run directory holding `task_dir`; None for a task
    outside one. `src_dir`: the sources to key it by, when they are not yet in `task_dir`."""
    task_dir = Path(task_dir)
    if task_dir.name != RUN_TASK:
        return None
    return task_dir.parent / CACHES / baseline_cache_key(src_dir or task_dir / "baseline_src")


def _write_json(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def load_task(task_dir: Path) -> tuple[OpSpec, Path, FrozenBaseline]:
    """Verify a task directory and return (spec, baseline_src, the frozen baseline)."""
    task = FrozenTask.open(task_dir)
    return task.spec, task.baseline_src, task.baseline


def default_out(spec: OpSpec, root: Path = Path("runs/tasks")) -> Path:
    return root / spec.name


def freeze(
    kernel_path: Path,
    out: Path | None = None,
    measure=None,
    *,
    op: str | None = None,
    solution: str | None = None,
    other_sizes: bool = True,
    probe_oracle: bool = True,
) -> Path:
    """Freeze `kernel_path`; return the task directory. Nothing is left behind on failure.

    `op` and `solution` pick the operator and expert baseline of a flashinfer-bench trace set.
    `other_sizes`: probe the reference at sizes the input does not list (scripts/sizes.py) and
    add those it accepts as correctness-only workloads.
    `probe_oracle`: run the reference on several input draws to see whether it discriminates
    (scripts/oracle_probe.py).
    """
    kernel_path = Path(kernel_path)
    spec, src_dir = load_spec(kernel_path, op=op, solution=solution)
    out = Path(out) if out else default_out(spec)
    if out.exists():
        if (out / manifest.MANIFEST).is_file():
            manifest.verify(out)
            frozen = OpSpec.model_validate_json((out / "spec.json").read_text())
            if frozen.as_listed() == spec and _same_sources(src_dir, out / "baseline_src"):
                return out  # already frozen from the same input
        raise BadInput(
            str(out), "output directory exists and holds something else; pick another --out"
        )
    refuse_links(src_dir)  # a link would copy a host file's content into the oracle
    # Runs the reference (in the sandbox): an oracle that nothing fails is said in
    # spec.degenerate, one with no finite output refused; other sizes it accepts are added.
    spec = untrusted.prepare_oracle(spec, src_dir, sizes=other_sizes, probe=probe_oracle)
    new_dirs = [p for p in [out.parent, *out.parent.parents] if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    staging.chmod(0o755)  # the frozen task is read by the boxes' uid (as root: nobody)
    cache = None
    try:
        # Links are copied as links (never followed), then refused: one made after the check
        # above is not read either.
        shutil.copytree(src_dir, staging / "baseline_src", ignore=IGNORED, symlinks=True)
        refuse_links(staging / "baseline_src")
        # The sources were staged in a mkdtemp directory (0700) that copytree copies the mode
        # of; the box's uid (nobody, when we are root) must read them. Only the sandboxed
        # oracle probe opened it up before, so a freeze without the probe failed its baseline.
        (staging / "baseline_src").chmod(0o755)
        _write_json(staging / "spec.json", spec.model_dump(mode="json"))
        _write_json(staging / "fingerprint.json", fingerprint())
        measure = measure or measure_baseline
        cache = run_baseline_cache(out, staging / "baseline_src")
        found = cache is not None and cache.exists()
        options = {"baseline_cache_dir": cache} if cache else {}
        _write_json(staging / "baseline.json", measure(spec, staging, **options))
        manifest.write(staging)
        staging.rename(out)
    except BaseException:
        _remove(staging)
        if cache is not None and not found and cache.exists():
            _remove(cache)  # the build of a baseline that did not freeze
        for d in new_dirs:  # deepest first: a failed freeze leaves no empty runs/tasks/
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
        raise
    return out


def measure_baseline(spec: OpSpec, task_dir: Path, **options) -> dict:
    """Check and time the staged baseline through the judge (the path every candidate takes);
    a baseline that does not pass its own check cannot be frozen."""
    module_for(spec.format)  # fail early on an unknown format
    verdict = judge_baseline(task_dir, **options)
    untimed = {w.name for w in spec.workloads if not w.timed}
    failed = {w.workload: w.reason for w in verdict.workloads if w.status is not Status.PASSED}
    if failed and verdict.workloads and set(failed) <= untimed:
        # The baseline fails only at sizes the user did not list: those are not checked.
        reasons = {name: f"the frozen baseline fails there: {why}" for name, why in failed.items()}
        spec = sizes.drop(spec, reasons)
        _write_json(Path(task_dir) / "spec.json", spec.model_dump(mode="json"))
    elif not verdict.passed:
        raise BadInput(f"{spec.name} baseline", f"it does not pass its own check: {verdict.reason}")
    workloads, checked_only = {}, {}
    for w in verdict.workloads:
        if w.workload in failed:
            continue
        result = {
            "status": w.status.value,
            "max_rel_error": w.max_rel_error,
            "tolerance": w.tolerance,
        }
        if w.checked_only:
            checked_only[w.workload] = result
        else:
            workloads[w.workload] = {**result, **w.timing.model_dump()}
    return {
        "device": device_kind(),
        "device_name": verdict.device,
        "workloads": workloads,
        "checked_only": checked_only,
    }


def _same_sources(a: Path, b: Path) -> bool:
    fa = {k: v for k, v in manifest.build(a).items()}
    fb = manifest.build(b)
    return fa == fb


def _remove(path: Path) -> None:
    def _chmod_and_retry(func, p, _exc):
        Path(p).chmod(0o700)
        func(p)

    shutil.rmtree(path, onerror=_chmod_and_retry)


def main(argv: list[str]) -> int:
    """`python -m kernel_bakeoff.scripts.freeze KERNEL_PATH OUT ANSWER.json`: `freeze` in a process of its own
    (tasks/check/freezing.py starts it on a leased device). Bad input is an answer, `{"bad_input":
    [where, what]}`, beside `{"ok": task_dir}`; any other failure is the process's exit status."""
    import os

    import torch

    kernel_path, out, answer = (Path(a) for a in argv)
    if not torch.cuda.is_available():  # without a GPU, Triton runs only under its interpreter
        os.environ.setdefault("TRITON_INTERPRET", "1")
    try:
        found = {"ok": str(freeze(kernel_path, out))}
    except BadInput as exc:
        found = {"bad_input": [exc.where, exc.what]}
    answer.write_text(json.dumps(found))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
