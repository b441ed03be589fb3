"""Profiling one candidate on one workload: ncu on NVIDIA, rocprofv3 on ROCm, else a plain no.

ncu runs with `--clock-control none`, so the kernel is profiled at the clocks it is timed at.
The profiled process (`python -m tasks.agents.profile_run`) gets the tool commands' scrubbed
environment plus the lane's device variable, and a deadline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 300.0


def which_profiler() -> tuple[str | None, str]:
    try:
        import torch

        has_gpu = torch.cuda.is_available()
        rocm = bool(getattr(torch.version, "hip", None))
    except ImportError:
        has_gpu, rocm = False, False
    if not has_gpu:
        return None, "no profiler here: no GPU on this host (profiles need ncu or rocprofv3)"
    tool = "rocprofv3" if rocm else "ncu"
    if shutil.which(tool) is None:
        return None, f"no profiler here: {tool} is not on PATH"
    return tool, ""


def profile(task_dir: Path, candidate: Path, workload: str, env: dict, device_env: dict) -> str:
    tool, why = which_profiler()
    if tool is None:
        return why
    run = [
        sys.executable,
        "-m",
        "tasks.agents.profile_run",
        str(task_dir),
        str(candidate),
        workload,
    ]
    out_dir = Path(env["TMPDIR"]) / "profile"
    if tool == "ncu":
        argv = ["ncu", "--clock-control", "none", "--target-processes", "all", "--csv"]
        argv += ["--page", "details", *run]
    else:
        argv = ["rocprofv3", "--kernel-trace", "--stats", "-d", str(out_dir), "--", *run]
    full_env = {**env, **device_env, "PYTHONPATH": str(ROOT)}
    from scripts import box, isolation

    # The candidate runs under the profiler: in the box (scripts/box.py), the task and the
    # candidate read-only, only the workspace's temporary directory writable.
    out_dir.mkdir(parents=True, exist_ok=True)
    plan = box.plan(read=[task_dir, candidate], write=[out_dir.parent], cwd=str(out_dir.parent))
    try:
        done = subprocess.run(
            isolation.wrap(argv, os.environ, plan),
            cwd=out_dir.parent,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return f"{tool} did not finish within {DEADLINE_S:g} s"
    text = done.stdout + done.stderr
    if tool == "rocprofv3":
        for stats in sorted(out_dir.rglob("*stats*.csv")):
            text += f"\n{stats.name}:\n{stats.read_text(errors='replace')}"
    return f"{tool} exit status {done.returncode}\n{text}"
