"""The model's quick check: is a draft right, at the small sizes, before it spends a timed check.

It runs the harness's own check (`scripts.check.check(..., quick=True)`: the same box, judge,
fresh inputs and comparison with the hidden reference, but only the correctness-only sizes and
the smallest workload, one trial each, nothing timed). Its answer is advice to the model and
nothing else: it makes no receipt, enters no record, ranks nothing, and is kept out of the run's
`checked/` cache, so a quick PASSED can never stand in for a verdict. It has an allowance of its
own per lane (`AgentSettings.quick_checks`), apart from the timed budget, and it waits for the
lane's device like every other use of it (`device_lock`): a quick check beside a timed one
would disturb the timed one's samples.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.verdict import Verdict

QUICK_TIMEOUT_S = 120.0


class QuickChecks:
    def __init__(
        self,
        task_dir: Path,
        work_dir: Path,
        *,
        entry_file: str,
        allowance: int,
        device_env: dict[str, str] | None = None,
        timeout_s: float = QUICK_TIMEOUT_S,
        device_lock: threading.Lock | None = None,
        run=None,
    ):
        self.task_dir = Path(task_dir)
        self.work_dir = Path(work_dir)  # the lane's, outside the workspace
        self.entry_file = entry_file  # a one-file candidate is checked as this file
        self.allowance = allowance
        self.device_env = dict(device_env or {})
        self.timeout_s = timeout_s
        self.device_lock = device_lock or threading.Lock()
        self.used = 0
        self._count = threading.Lock()
        self._run = run or self._harness

    def left(self) -> int:
        return self.allowance - self.used

    def _harness(self, candidate: Path, workdir: Path, timeout_s: float) -> Verdict:

        return check(
            self.task_dir,
            candidate,
            device_env=self.device_env,
            timeout_s=timeout_s,
            workdir=workdir,
            quick=True,
        )

    def __call__(self, source: Path, remaining: float = float("inf")) -> Verdict:
        """The quick verdict on `source` (a file or directory the tools resolved in the
        workspace); ValueError when the allowance is spent."""
        with self._count:
            if self.left() <= 0:
                raise ValueError(f"no quick checks left ({self.allowance} per lane)")
            self.used += 1
            n = self.used
        # A copy: what is judged is what was asked for, whatever the workspace holds meanwhile.
        copy = self.work_dir / f"{n:03d}" / "candidate"
        if copy.parent.exists():
            shutil.rmtree(copy.parent)
        if source.is_dir():
            # the tools' private directories and git are never part of a candidate
            skip = shutil.ignore_patterns("__pycache__", ".git", ".home", ".tmp")
            shutil.copytree(source, copy, ignore=skip)
        else:
            copy.mkdir(parents=True)
            shutil.copyfile(source, copy / self.entry_file)
        with self.device_lock:
            return self._run(copy, copy.parent / "check", min(self.timeout_s, remaining))


def quick_text(verdict: Verdict, left: int) -> str:
    """What the model reads: per size, its status and error against the tolerance; never a
    time (none was taken) and never a receipt (it is not a verdict of the record)."""
    lines = [
        f"quick check: {verdict.status.value} (correctness only, small sizes, untimed; not a "
        f"verdict: no receipt, no speedup; {left} quick check(s) left)"
    ]
    if verdict.reason:
        lines.append(f"reason: {verdict.reason}")
    for w in verdict.workloads:
        error = (
            f", error {w.max_rel_error:.2e} (tolerance {w.tolerance:g})"
            if w.max_rel_error is not None and w.tolerance
            else ""
        )
        lines.append(f"- {w.workload}: {w.status.value}{error}")
        if w.reason and w.reason != verdict.reason:
            lines.append(f"  {w.reason}")
    kernels = sorted({k for w in verdict.workloads for k in w.triton_kernels})
    if kernels:
        lines.append(f"Triton kernels launched: {', '.join(kernels)}")
    if verdict.output_tail.strip() and not verdict.passed:
        lines.append("output (last lines):\n" + "\n".join(verdict.output_tail.splitlines()[-30:]))
    return "\n".join(lines)
