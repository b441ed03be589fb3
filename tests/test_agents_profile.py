"""The profile tool (tasks/agents/profile.py, profile_run.py): the plain "no profiler here" on
this CPU machine, and the ncu and rocprofv3 commands it builds on a GPU host.

This machine has no GPU, so neither ncu nor rocprofv3 can run here. The GPU-host tests make the
tool believe it is on one (torch.cuda.is_available patched to True; torch.version.hip set for
ROCm) and put first on PATH a FAKE `ncu` / `rocprofv3`: a script that records the argv it was
given, then runs the command it was asked to profile (the real `python -m
tasks.agents.profile_run ...`, which runs the candidate once on the CPU), as the real profiler
would. So what is checked is the command line the tool builds and that its profiled command
works, not any profile.
"""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from kernel_bakeoff.tasks.agents.profile import profile, which_profiler

FAKE = """#!{python}
# A fake {tool}: records its argv, runs the profiled command, as the real one would.
import json, os, pathlib, subprocess, sys
seen = {{k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")}}
seen["anthropic"] = [k for k in os.environ if k.startswith("ANTHROPIC")]
pathlib.Path({record!r}).write_text(json.dumps({{"argv": sys.argv, "env": seen}}))
argv = sys.argv[1:]
command = argv[argv.index("--") + 1:] if "--" in argv else argv[argv.index("details") + 1:]
if "-d" in argv:  # rocprofv3's output directory: a stats file, as rocprofv3 writes one
    out = pathlib.Path(argv[argv.index("-d") + 1]) / "host" / "1"
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernel_stats.csv").write_text("Name,Calls\\nfake_kernel,3\\n")
status = subprocess.call(command)
print("fake {tool}: the profiled command exited", status)
sys.exit(status)
"""


def test_no_profiler_on_a_host_without_a_gpu(tmp_path, frozen_rmsnorm):
    tool, why = which_profiler()
    assert tool is None and why.startswith("no profiler here: no GPU on this host")
    said = profile(frozen_rmsnorm, frozen_rmsnorm / "baseline_src", "tokens_256", {}, {})
    assert said == why


@pytest.fixture
def gpu_host(monkeypatch, tmp_path):
    """A host that looks like it has a GPU, with a fake profiler first on PATH."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    # The profiler runs in the box, which sees the scratch directory and the system, not the
    # rest of tmp_path: the fake profiler and its record live in scratch.
    scratch = tmp_path / "scratch"
    bin_dir = scratch / "bin"
    bin_dir.mkdir(parents=True)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)

    def install(tool: str, rocm: bool):
        monkeypatch.setattr(torch.version, "hip", "6.2" if rocm else None)
        record = scratch / f"{tool}.argv.json"
        fake = bin_dir / tool
        fake.write_text(FAKE.format(python=sys.executable, tool=tool, record=str(record)))
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
        return record, {"PATH": path, "TMPDIR": str(scratch), "HOME": str(scratch)}

    return install


def _profiled(task, argv_tail: list[str]) -> list[str]:
    return [sys.executable, "-m", "kernel_bakeoff.tasks.agents.profile_run", str(task)] + argv_tail


def test_ncu_runs_at_the_timed_clocks_on_nvidia(gpu_host, frozen_rmsnorm):
    record, env = gpu_host("ncu", rocm=False)
    assert which_profiler() == ("ncu", "")
    candidate = frozen_rmsnorm / "baseline_src"
    said = profile(frozen_rmsnorm, candidate, "tokens_256", env, {"CUDA_VISIBLE_DEVICES": "3"})
    seen = json.loads(record.read_text())
    argv = seen["argv"]
    assert seen["env"]["CUDA_VISIBLE_DEVICES"] == "3" and not seen["env"]["anthropic"]
    assert argv[1:] == [
        "--clock-control", "none", "--target-processes", "all", "--csv", "--page", "details",
        *_profiled(frozen_rmsnorm, [str(candidate), "tokens_256"]),
    ]  # fmt: skip
    assert said.startswith("ncu exit status 0") and "profiled command exited 0" in said


def test_rocprofv3_traces_kernels_and_returns_its_stats_on_rocm(gpu_host, frozen_rmsnorm):
    record, env = gpu_host("rocprofv3", rocm=True)
    assert which_profiler() == ("rocprofv3", "")
    candidate = frozen_rmsnorm / "baseline_src"
    said = profile(frozen_rmsnorm, candidate, "tokens_1k", env, {"ROCR_VISIBLE_DEVICES": "1"})
    seen = json.loads(record.read_text())
    argv = seen["argv"]
    assert seen["env"]["ROCR_VISIBLE_DEVICES"] == "1"
    out_dir = os.path.join(env["TMPDIR"], "profile")
    assert argv[1:] == [
        "rocprofv3", "--kernel-trace", "--stats", "-d", out_dir, "--",
        *_profiled(frozen_rmsnorm, [str(candidate), "tokens_1k"]),
    ][1:]  # fmt: skip
    assert said.startswith("rocprofv3 exit status 0") and "profiled command exited 0" in said
    assert "kernel_stats.csv:\nName,Calls\nfake_kernel,3" in said


def test_a_profiler_missing_from_path_is_said(gpu_host, monkeypatch, tmp_path):
    gpu_host("rocprofv3", rocm=False)  # the fake is rocprofv3, the host is NVIDIA: no ncu
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert which_profiler() == (None, "no profiler here: ncu is not on PATH")
