"""Candidate code cannot read the orchestrator's credentials (scripts/isolation.py).

A real freeze and check of a KernelBench problem whose frozen baseline and candidate both scan
`/proc/*/environ` when they are imported (in the freeze's and the check's child processes and in
the judges, which import the baseline for the reference). The orchestrator and a stand-in for
the Prefect worker hold `ANTHROPIC_API_KEY`; isolated, no scan finds it. With isolation turned
off the same scan does find it, so the test can fail. The orchestrator runs as root and, inside
a user namespace that maps it to `nobody` without capabilities, as an ordinary user would.
"""

import ctypes
import os
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest

from kernel_bakeoff.scripts import isolation, sandbox

from .conftest import ROOT
from .ordinary_user import ordinary_user_prefix, skip_unless_reachable

SCAN = """
import json as _json, os as _os, uuid as _uuid


def _scan(who):
    seen, readable, leaks = [], 0, []
    for name in _os.listdir("/proc"):
        if not name.isdigit():
            continue
        seen.append(int(name))
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                data = f.read()
        except OSError:
            continue
        readable += 1
        if b"ANTHROPIC_API_KEY=" in data or SECRET in data:
            leaks.append(int(name))
    found = {"who": who, "pid": _os.getpid(), "seen": len(seen), "leaks": leaks}
    print("SCAN", _json.dumps(found), flush=True)
    # The box writes nothing outside it, so a finding is said by failing: the check does not pass.
    if leaks or len(seen) > 8:
        raise RuntimeError(f"LEAK {found}")
"""

PROBLEM = """
import torch
import torch.nn as nn
{scan}
_scan("baseline")


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
"""

CANDIDATE = """
import torch
import torch.nn as nn
{scan}
_scan("candidate")


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
"""

ORCHESTRATOR = """
import sys
from pathlib import Path
from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze
task = freeze(Path(sys.argv[1]), Path(sys.argv[2]))
verdict = check(task, Path(sys.argv[3]), timeout_s=120, samples=3)
print("STATUS", verdict.status.value, verdict.reason)
print(verdict.output_tail)
"""


NOBODY = 65534


def _bake(tmp_path: Path, secret: str) -> tuple[Path, Path]:
    scan = SCAN.replace("SECRET", repr(secret.encode()))
    problem, candidate = tmp_path / "relu.py", tmp_path / "relu_new.py"
    problem.write_text(PROBLEM.format(scan=textwrap.indent(scan, "")))
    candidate.write_text(CANDIDATE.format(scan=scan))
    return problem, candidate


def _scans(tmp_path: Path, *, prefix: list[str], isolation_mode: str) -> str:
    """The orchestrator's output; it passed only if no scan found the key or the host's pids."""
    secret = f"sk-ant-test-{uuid.uuid4().hex}"
    problem, candidate = _bake(tmp_path, secret)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ANTHROPIC_API_KEY": secret,
        "BAKEOFF_ISOLATION": isolation_mode,
    }
    # The Prefect worker that started the engine: a long-lived process holding the key.
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=env)
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", ORCHESTRATOR, str(problem)]
            + [str(tmp_path / "task"), str(candidate)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        worker.kill()
        worker.wait()
    return done.stdout + done.stderr


def _isolated(output: str) -> None:
    # No scan raised (the key unseen, only the box's handful of processes visible) ...
    assert "STATUS PASSED" in output and "LEAK" not in output, output
    # ... and the candidate's scan did run.
    assert 'SCAN {"who": "candidate"' in output, output


needs_namespaces = pytest.mark.skipif(
    isolation.probe() is not None, reason=f"no user namespaces here: {isolation.probe()}"
)


@pytest.mark.slow
@needs_namespaces
def test_candidate_and_baseline_cannot_read_the_orchestrators_key(tmp_path):
    _isolated(_scans(tmp_path, prefix=[], isolation_mode="box"))


@pytest.mark.slow
@needs_namespaces
def test_as_an_ordinary_user_too(tmp_path):
    """The orchestrator as an ordinary user of the host. As root, that user is `nobody` (uid
    65534 on the host, no capabilities), reached through a box itself: the interpreter lives
    under /root (mode 700), which nobody could not reach otherwise; the orchestrator's boxes
    are then made unprivileged, nested in it."""
    prefix = ordinary_user_prefix(tmp_path)
    _isolated(_scans(tmp_path, prefix=prefix, isolation_mode="box"))


def _boxed_as_a_user(probe) -> tuple[int, str]:
    """`probe()` in a box entered by a forked, non-dumpable process of an ordinary user (as
    root: nobody, by setuid): its exit status and what the probe said (or why no box)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a judge
        said = "enter() returned in the process that called it"
        try:
            os.close(read)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            sandbox.protect_self()
            why = isolation.enter()
            said = probe() if why is None else why
        except BaseException as exc:  # noqa: BLE001 - said to the test, which fails on it
            said = f"{type(exc).__name__}: {exc}"
        finally:
            os.write(write, said.encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        said = f.read().decode()
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), said


@needs_namespaces
def test_a_non_dumpable_process_of_an_ordinary_user_is_isolated():
    """The fork server's judges are non-dumpable (sandbox.protect_self), which makes their
    /proc/self files root's. Run as an ordinary user (a real one: `nobody` here, by setuid
    from root, unlike the test above, whose user namespace leaves it root outside), every
    warm-started check failed: the namespaces were made, the user's id maps could not be
    written, and the half-isolated judge could not start a thread."""
    skip_unless_reachable()

    def start_a_thread() -> str:
        started = threading.Thread(target=lambda: None)
        started.start()
        started.join()
        return f"isolated as {os.getuid()}, {len(os.listdir('/proc'))} /proc entries"

    code, said = _boxed_as_a_user(start_a_thread)
    uid = NOBODY if os.geteuid() == 0 else os.getuid()
    assert code == 0 and said.startswith(f"isolated as {uid},"), (code, said)


@needs_namespaces
def test_the_boxs_pid_1_stays_out_of_the_codes_reach():
    """As an ordinary user the box's own processes are dumpable, for the relay to read their
    memory (isolation._readable_by_the_relay). Its PID 1 is inside the code's PID namespace:
    it keeps capabilities the code drops, so the code may neither trace it nor read its
    memory, environment or mappings (its pipe reports how the code ended)."""
    skip_unless_reachable()

    def reach_pid_1() -> str:
        libc = ctypes.CDLL(None, use_errno=True)
        reached = []
        for path in ("/proc/1/smaps_rollup", "/proc/1/mem", "/proc/1/environ"):
            try:
                with open(path, "rb") as f:
                    f.read(1)
                reached.append(path)
            except PermissionError:
                pass
        if libc.ptrace(16, 1, None, None) == 0:  # PTRACE_ATTACH
            reached.append("ptrace")
        with open("/proc/self/smaps_rollup", "rb") as f:  # the control: readable
            return f"reached {reached}, self {len(f.read()) > 0}"

    code, said = _boxed_as_a_user(reach_pid_1)
    assert code == 0 and said == "reached [], self True", (code, said)


@pytest.mark.slow
def test_without_isolation_the_same_scan_finds_the_key(tmp_path):
    """The control: the scan works, so the two tests above could fail."""
    output = _scans(tmp_path, prefix=[], isolation_mode="none")
    assert "LEAK" in output and "STATUS PASSED" not in output, output


def test_the_warning_says_what_is_at_stake(monkeypatch):
    monkeypatch.setenv("BAKEOFF_ISOLATION", "none")
    line = isolation.warning()
    assert line and "NOT in its box" in line and "environments" in line
    monkeypatch.setenv("BAKEOFF_ISOLATION", "box")
    assert isolation.warning() is None


def test_an_input_named_by_a_relative_path_is_read_in_the_sandbox(monkeypatch):
    from kernel_bakeoff.scripts.untrusted import load_spec

    monkeypatch.chdir(ROOT)
    spec, src = load_spec(Path("examples/rmsnorm_torch"))
    assert spec.name == "rmsnorm" and (src / "kernel.py").is_file()
