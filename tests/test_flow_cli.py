"""`bakeoff run` end to end in a subprocess (Prefect's embedded server), and its refusals."""

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from .conftest import EXAMPLES, cli_in_process, run_cli, seed_frozen

pytestmark = pytest.mark.slow

KERNEL = str(EXAMPLES / "rmsnorm_torch")


@pytest.fixture
def env(tmp_path):
    return {"BAKEOFF_LOCK_DIR": str(tmp_path / "locks"), "BAKEOFF_CPU_SLOTS": "2"}


REFUSALS = [
    (["--mode", "turbo"], "mode: unknown mode 'turbo'; use optimize, author or bakeoff"),
    (["--mode", "bakeoff", "--backends", "triton,fortran"], "unknown backend 'fortran'"),
    (["--budget", "0"], "budget: must be at least 1, got 0"),
    (["--gpu-ids", "0,7"], "gpu_ids: device"),
    (["--samples", "0"], "samples: must be at least 5, got 0"),
    (["--cpu-slots", "0"], "cpu_slots: must be at least 1"),
    (["--target-language", "triton"], "target_language: applies only to --mode author"),
    (["--backends", "triton"], "backends: applies only to --mode bakeoff"),
    (["--lane-timeout", "0"], "lane_timeout_s: must be positive"),
]


def _refused_in_one_line(proc, message: str, runs: Path) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("bakeoff run: error: ") and message in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    assert not runs.exists()


def test_bad_input_is_one_line_before_a_prefect_server_starts(tmp_path, env):
    """One refusal as a user meets it, in a fresh process with a Prefect home of its own: the
    server's database never appears there (the refusals below are checked in this process)."""
    args, message = REFUSALS[0]
    home = tmp_path / "prefect-home"  # Prefect's server makes its database here on starting
    env = {**env, "PREFECT_HOME": str(home)}
    proc = run_cli("run", KERNEL, "--runs-root", str(tmp_path / "runs"), *args, env=env)
    _refused_in_one_line(proc, message, tmp_path / "runs")
    assert not list(home.glob("*.db*"))  # refused before a Prefect server was started


@pytest.mark.parametrize("args, message", REFUSALS[1:])
def test_bad_input_is_one_line_before_anything_starts(
    args, message, tmp_path, env, capfd, monkeypatch
):
    """Each refusal by the command's own `main` in this process (an interpreter start and its
    imports a case cost ~6 s), with any start of Prefect's temporary server made to fail."""
    from prefect.server.api.server import SubprocessASGIServer

    def no_server(*_a, **_k):
        raise AssertionError("a Prefect server was started for input that is refused")

    monkeypatch.setattr(SubprocessASGIServer, "start", no_server)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    proc = cli_in_process(capfd, "run", KERNEL, "--runs-root", str(tmp_path / "runs"), *args)
    _refused_in_one_line(proc, message, tmp_path / "runs")


TWO_RUNS = """
import os, sys
from kernel_bakeoff.flows import cli
name = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
said = []
for given in (None, "45"):
    os.environ.pop(name, None) if given is None else os.environ.update({name: given})
    code = cli.main(["run", sys.argv[1], "--runs-root", sys.argv[2]])
    said.append(f"{code} {os.environ.get(name)} {'prefect.context' in sys.modules}")
print("; ".join(said))
"""


def test_prefects_temporary_server_gets_two_minutes_to_start_unless_told(tmp_path, env):
    """Prefect's own 20 s was too little for a fresh clone's first quickstart on a busy 2-core
    host. The command sets its default in the environment, which Prefect reads once, when it
    is imported: not yet, when the command refuses a spec-less directory. A user's value
    stands."""
    specless = tmp_path / "specless"  # refused inside the command's run, before any server
    specless.mkdir()
    (specless / "kernel.py").write_text("def f(x):\n    return x\n")
    done = subprocess.run(
        [sys.executable, "-c", TWO_RUNS, str(specless), str(tmp_path / "runs")],
        env={**os.environ, **env, "ANTHROPIC_API_KEY": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip() == "2 120 False; 2 45 False", done.stdout + done.stderr


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("BAKEOFF_PRECOMPILE_JOBS", "four", "BAKEOFF_PRECOMPILE_JOBS: must be a whole"),
        ("BAKEOFF_SAMPLES", "3", "BAKEOFF_SAMPLES: must be a whole number of at least 5"),
        ("BAKEOFF_CPU_LLC_MIB", "big", "BAKEOFF_CPU_LLC_MIB: must be a positive number of MiB"),
    ],
)
def test_a_bad_setting_is_one_line_before_anything_starts(
    name, value, message, tmp_path, env, capfd, monkeypatch
):
    for var, setting in {**env, name: value}.items():
        monkeypatch.setenv(var, setting)
    proc = cli_in_process(capfd, "run", KERNEL, "--runs-root", str(tmp_path / "runs"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"bakeoff run: error: {message}")
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "runs").exists()


def test_kernel_that_does_not_freeze_is_refused(tmp_path, env):
    op = tmp_path / "broken_op"
    op.mkdir()
    (op / "op.toml").write_text((EXAMPLES / "rmsnorm_torch" / "op.toml").read_text())
    (op / "kernel.py").write_text("def rmsnorm(x, weight, eps=1e-6):\n    raise ValueError('no')\n")
    proc = run_cli("run", str(op), "--runs-root", str(tmp_path / "runs"), env=env)
    assert proc.returncode == 2, proc.stderr
    assert "ValueError: no" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_full_run_reports_skips_modelless_lanes_and_second_run_reuses(
    tmp_path, env, prefect_api_env
):
    env = {**env, **prefect_api_env}  # the temporary server's start: the Ctrl-C test below
    args = ("run", KERNEL, "--mode", "bakeoff", "--budget", "1", "--json")
    first = run_cli(*args, "--runs-root", str(tmp_path / "runs"), env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    result = json.loads(first.stdout)
    said = first.stderr  # a pipe, not a terminal: progress as plain lines, one per change
    # a lane's states as seen at each poll (its one candidate may be Discover's, reused at once)
    for line in ("freezing ", " discover", " lanes", "lane torch: completed", " done"):
        assert line in said, said[-3000:]

    assert [lane["key"] for lane in result["lanes"]][0] == "torch"
    assert result["lanes"][0]["status"] == "completed"
    for lane in result["lanes"]:  # without a model, an author lane is skipped and says why
        assert lane["status"] == "completed" or (
            lane["status"] == "skipped"
            and lane["reason"].startswith("no model configured")  # the status is not repeated
        ), lane
    assert set(result["baseline_ms"]) == {"tokens_256", "tokens_1k"}
    assert result["candidates"] and all(
        {"language", "mode", "status", "speedup", "speedups", "path"} <= set(c)
        for c in result["candidates"]
    )
    assert (result["winner"] is None) or result["winner"]["status"] == "winner"
    report = open(result["report"]).read()
    assert "kept" in report if result["winner"] is None else "## Winner" in report
    progress = json.loads((Path(result["run_dir"]) / "progress.json").read_text())
    started = {k: datetime.fromisoformat(v) for k, v in progress["phase_started"].items()}
    order = ["freeze", "discover", "lanes", "report", "done"]
    assert sorted(started, key=started.get) == order  # where the run's time went
    marks = json.loads((Path(result["run_dir"]) / "cli_timeline.json").read_text())
    times = [marks[k] for k in ("process", "freeze", "frozen", "server", "flow_done")]
    assert times == sorted(times) and times[-1] - times[0] < 600, marks  # and outside them
    assert marks["frozen"] <= started["freeze"].timestamp() <= marks["flow_done"]

    # Lanes at work overlap in test_flow_bakeoff; here, without a model, only the torch lane has
    # work, and a skipped author lane says so without waiting for a device.
    assert [lane["key"] for lane in result["lanes"] if lane["lease_start"]] == ["torch"]

    result_files = sorted(Path(result["run_dir"]).glob("lanes/*/lane_result.json"))
    stamps = [f.stat().st_mtime_ns for f in result_files]
    second = run_cli(*args[:-1], "--runs-root", str(tmp_path / "runs"), env=env)
    assert second.returncode == 0, second.stderr[-3000:]
    out = second.stdout
    assert "torch (optimize)" in out and out.count(" reused ") == len(result["lanes"])
    assert "speedup over the frozen baseline" in out  # the ranking table
    assert ("\nwinner:" in out) != ("original kernel is kept" in out)
    if "\nwinner:" in out:
        assert "\nwinner's files: " in out  # the path line says what it is
    # one denominator: each candidate's median per workload divides the frozen figure into its
    # speedup, in --json and beside it in the table, and every row but the winner says why
    for c in result["candidates"]:
        for name, x in c["speedups"].items():
            if x is not None:
                assert x * c["median_ms"][name] == pytest.approx(result["baseline_ms"][name])
                assert f"{x:.3f}x" in out and f"{c['median_ms'][name]:.4g} ms" in out
        if c["status"] != "winner":
            assert c["detail"] and c["detail"].split()[0] in out, c
    for lane in result["lanes"]:
        if lane["status"] == "skipped":
            assert f"lane {lane['key']} ({lane['language']} {lane['mode']}): skipped: " in out
    assert [f.stat().st_mtime_ns for f in result_files] == stamps
    again = json.loads((Path(result["run_dir"]) / "report.json").read_text())
    assert [r["speedup"] for r in again["rows"]] == [c["speedup"] for c in result["candidates"]]


def test_ctrl_c_stops_with_one_line_and_the_same_command_resumes(
    tmp_path, env, prefect_api_env, frozen_rmsnorm
):
    import os
    import signal
    import subprocess
    import sys

    from .conftest import ROOT

    full = {**os.environ, "PYTHONPATH": str(ROOT), **env, "PREFECT_HOME": str(tmp_path / "home")}
    for name in ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "DO_NOT_TRACK"):
        full.pop(name, None)  # outside CI Prefect would print its usage notice mid-display
    # budget 1: the lanes phase still lasts a compiled check (seconds), far longer than the
    # 0.2 s poll below needs to see it begin; the resumed run redoes those lanes
    argv = [sys.executable, "-m", "kernel_bakeoff.flows.cli", "run", KERNEL, "--budget", "1"]
    argv += ["--runs-root", str(tmp_path / "runs")]
    seed_frozen(frozen_rmsnorm, tmp_path / "runs")  # its subject is the stop, not the freeze
    # as at a terminal: a suite started in the background (nohup, `&` in a script) hands its
    # children SIGINT ignored, and Python then never turns Ctrl-C into KeyboardInterrupt
    proc = subprocess.Popen(
        argv,
        env=full,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        phases = [
            json.loads(p.read_text()).get("phase")
            for p in (tmp_path / "runs").glob("*/progress.json")
        ]
        if "lanes" in phases:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = (s.decode(errors="replace") for s in proc.communicate(timeout=60))
    assert proc.returncode == 130, out + err
    assert err.strip().splitlines()[-1] == "bakeoff run: stopped; run the same command to resume"
    for noise in ("Traceback", "KeyboardInterrupt", "anonymous usage"):
        assert noise not in out + err, out + err
    [run_dir] = (tmp_path / "runs").iterdir()
    assert run_dir.name.startswith("rmsnorm-optimize-")  # each mode keeps its own directory

    # the resumed run on the worker's server: a temporary server's start is the first run's
    resumed = {**full, **prefect_api_env}
    again = subprocess.run(argv, env=resumed, cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming: the last run here stopped in phase 'lanes'" in again.stdout
    assert "anonymous usage" not in again.stdout + again.stderr
    # the database of the server a run starts: what the refusals above are checked never to make
    assert list((tmp_path / "home").glob("*.db*"))


def test_a_run_that_judged_nothing_says_no_verdict_and_exits_1(
    tmp_path, env, prefect_api_env, frozen_rmsnorm
):
    seed_frozen(frozen_rmsnorm, tmp_path / "runs", "author", "triton")  # not about the freeze
    proc = run_cli(
        "run", KERNEL, "--mode", "author", "--target-language", "triton", "--budget", "1",
        "--runs-root", str(tmp_path / "runs"), env={**env, **prefect_api_env},
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    why = "lane triton: skipped: no model configured; set ANTHROPIC_API_KEY"
    assert f"no verdict: no candidate was checked ({why})" in proc.stdout
    assert "no winner" not in proc.stdout
    (report,) = (tmp_path / "runs").glob("*/report.md")
    assert "## No verdict: no candidate was checked" in report.read_text()
    assert "skipped: skipped" not in report.read_text() + proc.stdout  # the status said once
    assert "No verdict" in report.with_name("report.html").read_text()
