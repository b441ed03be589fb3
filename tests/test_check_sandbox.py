"""The process layer under the harness: environment scrub, deadlines, survivors, marker times."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from kernel_bakeoff.scripts import sandbox

from .conftest import ROOT


def test_scrub_env_removes_credentials_and_orchestrator_settings():
    env = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "CUDA_VISIBLE_DEVICES": "3",
        "TRITON_INTERPRET": "1",
        "OPENAI_API_KEY": "k",
        "GITHUB_TOKEN": "t",
        "MY_SECRET": "s",
        "DB_PASSWORD": "p",
        "AWS_ACCESS_KEY_ID": "a",
        "PREFECT_API_URL": "http://127.0.0.1:4200/api",
        "PREFECT_API_KEY": "pk",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/",
        "HF_TOKEN": "h",
    }
    assert sandbox.scrub_env(env) == {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "CUDA_VISIBLE_DEVICES": "3",
        "TRITON_INTERPRET": "1",
    }


def test_secret_values_are_redacted_from_text():
    values = sandbox.secret_values(
        {"API_KEY": "sk-live-12345678", "PATH": "/usr/bin", "X_TOKEN": "ab"}
    )
    assert values == ["sk-live-12345678"]  # too short to redact safely: "ab"
    assert sandbox.redact("key=sk-live-12345678 end", values) == "key=[redacted] end"


def test_exit_descriptions_name_the_signal():
    assert sandbox.describe_exit(-signal.SIGSEGV).startswith("was killed by SIGSEGV")
    assert sandbox.describe_exit(0) == "exited with status 0"
    assert sandbox.describe_exit(3) == "exited with status 3"


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def by_token(token: str) -> list[int]:
    """Live host processes whose command line holds `token` (pids a candidate reports are its
    namespace's own when it is isolated, so they cannot be checked from here)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return [pid for pid in found if running(pid)]


@pytest.mark.parametrize("isolation", ["namespace", "none"])
def test_deadline_kills_the_whole_process_group(tmp_path, isolation):
    token = f"helper-{uuid.uuid4().hex}"
    code = f"""
        import subprocess, sys, time
        from pathlib import Path
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{token}"])
        Path("helper.pid").write_text(str(helper.pid))
        time.sleep(600)
    """
    env = {**os.environ, "BAKEOFF_ISOLATION": isolation}
    finished = sandbox.run(
        _python(code), env=env, cwd=tmp_path, log_path=tmp_path / "log", timeout_s=3
    )
    assert finished.timed_out and finished.returncode == -signal.SIGKILL
    assert (tmp_path / "helper.pid").is_file()
    deadline = time.monotonic() + 5  # SIGKILL is delivered asynchronously
    while time.monotonic() < deadline and by_token(token):
        time.sleep(0.05)
    assert not by_token(token)


def running(pid: int) -> bool:
    try:
        return " Z " not in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False


DETACHED = """
    import os, sys, time
    from pathlib import Path
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            Path("daemon.pid").write_text(str(os.getpid()))
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", "TOKEN"])
        os._exit(0)
    time.sleep(0.5)
"""

DRIVER = """
import os, sys
from pathlib import Path
from kernel_bakeoff.scripts import sandbox
assert sandbox.become_subreaper()
finished = sandbox.run([sys.executable, "-c", sys.argv[1]], env=dict(os.environ), cwd=Path.cwd(),
                       log_path=Path("log"), timeout_s=60, sweep=True)
assert Path("daemon.pid").is_file()
print(finished.returncode, finished.killed)
"""


@pytest.mark.parametrize("isolation", ["namespace", "none"])
def test_a_detached_daemon_does_not_survive_its_check(tmp_path, isolation):
    token = f"daemon-{uuid.uuid4().hex}"
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, textwrap.dedent(DETACHED).replace("TOKEN", token)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "BAKEOFF_ISOLATION": isolation},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    returncode, killed = done.stdout.split()
    assert returncode == "0" and not by_token(token)
    if isolation == "none":  # isolated, the namespace's end killed it before the sweep looked
        assert int(killed) >= 1


def test_marker_lines_carry_the_time_they_were_written_however_late_they_are_read(tmp_path):
    code = """
        import json, os, sys, time
        fd = int(sys.argv[1])
        times = [time.time_ns()]
        os.write(fd, b"begin 0 0\\n")
        times.append(time.time_ns())
        time.sleep(0.3)
        times.append(time.time_ns())
        os.write(fd, b"end 0 0\\n")
        times.append(time.time_ns())
        with open("written.json", "w") as f:
            json.dump(times, f)
    """
    child = sandbox.Child(
        _python(code),
        env=dict(os.environ),
        cwd=tmp_path,
        log_path=tmp_path / "log",
        timeout_s=30,
        with_markers=True,
    )
    time.sleep(1.0)  # busy elsewhere, as the judge is while it imports torch
    finished = child.wait()
    assert finished.returncode == 0 and not finished.timed_out
    (begin, t0), (end, t1) = finished.markers
    assert (begin, end) == ("begin 0 0", "end 0 0")
    # each stamp lies between the child's clock readings around its write (the same clock,
    # CLOCK_REALTIME), not at the read a second later: no bound on how fast this machine is
    before_begin, after_begin, before_end, after_end = json.loads(
        (tmp_path / "written.json").read_text()
    )
    assert before_begin <= t0 <= after_begin and before_end <= t1 <= after_end
    assert (t1 - t0) / 1e9 >= 0.3


@pytest.mark.skipif(os.geteuid() != 0, reason="capabilities are dropped only when running as root")
def test_a_root_candidate_runs_without_capabilities(tmp_path):
    code = """
        from kernel_bakeoff.scripts import sandbox
        sandbox.confine_self()
        print(open("/proc/self/status").read())
    """
    done = subprocess.run(
        _python(code),
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    status = dict(line.split(":\t") for line in done.stdout.splitlines() if ":\t" in line)
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0
    assert status["NoNewPrivs"].strip() == "1"
