"""Profiling one candidate on one workload: ncu on NVIDIA, rocprofv3 on ROCm, torch.profiler on
a host without a GPU (`digest`, parsed into a short table); `profile` is the profiler's raw output.

ncu runs with `--clock-control none`, so the kernel is profiled at the clocks it is timed at.
The profiled process (`python -m kernel_bakeoff.tasks.agents.profile_run`) gets the tool commands' scrubbed
environment plus the lane's device variable, and a deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from kernel_bakeoff.scripts import box, forkserver, isolation, sandbox
from kernel_bakeoff.tasks.agents import profile_parse
from kernel_bakeoff.tasks.agents.digest import build, render
from kernel_bakeoff.tasks.check.roofline import device_rates, floors

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


def _run(tool: str, task_dir: Path, candidate: Path, workload: str, env: dict, device_env: dict):
    """The profiler (or, for "torch.profiler", the profiled command alone) over one candidate
    on one workload, in the box; (exit status or None on its deadline, its output, its
    output directory)."""
    args = [str(task_dir), str(candidate), workload]
    out_dir = Path(env["TMPDIR"]) / "profile"
    full_env = {**env, **device_env, "PYTHONPATH": str(ROOT)}
    # Its home is the one writable directory of its box: Triton keeps its cache under HOME.
    full_env["HOME"] = str(out_dir.parent)

    # The candidate runs under the profiler: in the box (scripts/box.py), the task and the
    # candidate read-only, only the workspace's temporary directory writable.
    out_dir.mkdir(parents=True, exist_ok=True)
    plan = box.plan(read=[task_dir, candidate], write=[out_dir.parent], cwd=str(out_dir.parent))
    if tool == "torch.profiler":  # no profiler wraps it: forked by the checks' warm server
        return _fork([*args, "--torch-profiler"], full_env, device_env, out_dir, plan)
    run = [sys.executable, "-m", "kernel_bakeoff.tasks.agents.profile_run", *args]
    if tool == "ncu":
        argv = ["ncu", "--clock-control", "none", "--target-processes", "all", "--csv"]
        argv += ["--page", "details", *run]
    else:
        argv = ["rocprofv3", "--kernel-trace", "--stats", "-d", str(out_dir), "--", *run]
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
        return None, "", out_dir
    return done.returncode, done.stdout + done.stderr, out_dir


def _fork(argv: list[str], env: dict, device_env: dict, out_dir: Path, plan: dict):
    """`profile_run` forked by the warm server the lane's checks use (scripts/forkserver.py),
    in the box: no interpreter start or torch import; a fresh one where warm starts are off."""

    log = out_dir.parent / "profile_run.log"
    finished = forkserver.run_module(
        "kernel_bakeoff.tasks.agents.profile_run",
        argv,
        server_env=sandbox.judge_env(device_env),
        env=env,
        cwd=out_dir.parent,
        log_path=log,
        timeout_s=DEADLINE_S,
        box=plan,
    )
    status = None if finished.timed_out else finished.returncode
    text = log.read_text(errors="replace") if log.exists() else ""
    return status, text, out_dir


def profile(task_dir: Path, candidate: Path, workload: str, env: dict, device_env: dict) -> str:
    """The profiler's raw output (ncu's CSV; rocprofv3's stats files)."""
    tool, why = which_profiler()
    if tool is None:
        return why
    status, text, out_dir = _run(tool, task_dir, candidate, workload, env, device_env)
    if status is None:
        return f"{tool} did not finish within {DEADLINE_S:g} s"
    if tool == "rocprofv3":
        for stats in sorted(out_dir.rglob("*stats*.csv")):
            text += f"\n{stats.name}:\n{stats.read_text(errors='replace')}"
    return f"{tool} exit status {status}\n{text}"


def digest(
    task_dir: Path, candidate: Path, workload: str, env: dict, device_env: dict, name: str = ""
) -> str:
    """The profile digest of a candidate on one workload as the model reads it, or why none."""

    found = take_digest(task_dir, candidate, workload, env, device_env, name)
    return found if isinstance(found, str) else render(found)


def take_digest(
    task_dir: Path, candidate: Path, workload: str, env: dict, device_env: dict, name: str = ""
):
    """The profile digest of a candidate on one workload (tasks/agents/digest.py): ncu on
    NVIDIA, rocprofv3 on ROCm, torch.profiler on a host without a GPU; or why there is none."""
    # here: scripts.freeze brings torch, a second of import this module's callers skip
    from kernel_bakeoff.scripts.freeze import load_task

    tool, why = which_profiler()
    if tool is None and "no GPU" not in why:
        return why
    tool = tool or "torch.profiler"
    spec, _, _ = load_task(Path(task_dir))
    if workload not in [w.name for w in spec.workloads]:
        return f"no workload {workload!r}; the workloads are {', '.join(w.name for w in spec.workloads)}"
    status, text, out_dir = _run(tool, task_dir, candidate, workload, env, device_env)
    if status is None:
        return f"{tool} did not finish within {DEADLINE_S:g} s"
    total, calls = None, profile_parse.CALLS
    if tool == "ncu":
        stats = profile_parse.parse_ncu(text)
    elif tool == "rocprofv3":
        stats = profile_parse.parse_rocprof(out_dir)
    else:
        stats, total, calls = profile_parse.parse_torch(text)
    if not stats:
        tail = "\n".join(text.splitlines()[-30:])
        return f"{tool} (exit status {status}) reported no kernels; its output ends:\n{tail}"
    fingerprint = json.loads((Path(task_dir) / "fingerprint.json").read_text())
    rates = device_rates(fingerprint)
    floor = next((f for f in floors(spec, rates) if f.workload == workload), None)
    return build(
        tool,
        stats,
        calls=calls,
        rates=rates,
        floor=floor,
        candidate=name or Path(candidate).name,
        workload=workload,
        total_us=total,
    )
