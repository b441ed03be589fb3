"""The temporary Prefect server started beside the freeze (flows/prefect_workarounds.py): on a GPU
host it is up, healthy and the very instance the first flow call uses, by the time the freeze
ends; on a CPU-only host nothing starts early (the freeze's timing would share its cores).
Each case in a fresh interpreter with no Prefect API configured, as `bakeoff run` starts."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = textwrap.dedent(
    """
    import sys, time
    import httpx
    from kernel_bakeoff.flows.prefect_workarounds import start_beside_freeze
    t0 = time.monotonic()
    join = start_beside_freeze(sys.argv[1])
    returned = time.monotonic() - t0
    join()
    from prefect.server.api.server import SubprocessASGIServer
    started = list(SubprocessASGIServer._instances.values())
    if started:
        server = SubprocessASGIServer()
        print("health", httpx.get(server.api_url + "/health").status_code)
        from prefect.client.orchestration import get_client
        with get_client(sync_client=True) as client:  # the flow's way in: the same server
            print("same", str(client.api_url).rstrip("/") == server.api_url.rstrip("/"))
        server.stop()
    print("returned_s", round(returned, 2), "started", len(started))
    """
)


def run(kind: str, tmp_path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    # the suite's deadline for the server's start (tests/conftest.py), not Prefect's 20 s: under
    # load the start took longer, failed quietly (left to the flow's own start) and the health
    # request was refused
    timeout = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
    env[timeout] = os.environ.get(timeout, "120")
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, kind],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_on_a_gpu_host_the_server_is_up_when_the_freeze_ends(tmp_path):
    out = run("cuda", tmp_path)
    assert "health 200" in out and "same True" in out and "started 1" in out
    returned = float(out.split("returned_s ")[1].split()[0])
    # the caller went on to freeze at once: a thread's start, far from the server's 20 s and more
    assert returned < 5.0


def test_on_a_cpu_host_nothing_starts_early(tmp_path):
    out = run("cpu", tmp_path)
    assert "started 0" in out and "health" not in out


WARM_FORKS = textwrap.dedent(
    """
    import sys
    from kernel_bakeoff.scripts import forkserver
    import kernel_bakeoff.flows.live as live
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    made = []
    class Counted(forkserver.Server):
        def __init__(self, env, compiler=False):
            made.append((env, compiler))
            super().__init__(env, compiler)

    forkserver.Server = Counted
    warm = live.warm_fork_server
    live.warm_fork_server = lambda devices: warm(devices, on_cpu=True)
    at_freeze = []
    freeze = live.freeze_isolated
    live.freeze_isolated = lambda *a: at_freeze.append(len(made)) or freeze(*a)
    from tests.role_doubles import QUICK  # lanes whose checks are copies of the baseline

    request = BakeoffRequest(
        kernel_path=sys.argv[1], mode="optimize", budget=1, run_dir=sys.argv[2], agents=QUICK
    )
    status = live.run(request, as_json=True)
    checks = sum(1 for _, compiler in made if compiler)  # the servers that fork checks
    print("status", status, "at freeze", at_freeze, "check servers", checks, file=sys.stderr)
    """
)


@pytest.mark.slow
def test_the_flows_checks_fork_from_the_server_warmed_beside_the_freeze(tmp_path):
    """Its environment is the one the flow's checks ask for, so no second server starts for them
    (the freeze's own, in the freeze's process, is not counted). The lanes check copies of the
    baseline (tests/role_doubles.py): which candidates are checked does not choose the server,
    and Discover's torch.compile checks made this test a minute long."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    # the suite's deadline for the server's start (tests/conftest.py), not Prefect's 20 s: under
    # load the start took longer, failed quietly (left to the flow's own start) and the health
    # request was refused
    timeout = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
    env[timeout] = os.environ.get(timeout, "120")
    env.update(BAKEOFF_LOCK_DIR=str(tmp_path / "locks"), BAKEOFF_CPU_SLOTS="2")
    kernel = ROOT / "examples" / "rmsnorm_torch"
    done = subprocess.run(
        [sys.executable, "-c", WARM_FORKS, str(kernel), str(tmp_path / "run")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    # the checks' server is the one warmed beside the freeze (a sandboxed trace of the reference,
    # where Discover makes one, forks from a server of its own: no compiler, another environment)
    # on a CPU host the frozen baseline is timed again once the servers started beside its first
    # freeze (tasks/check/quiet_baseline.py): one check server at each freeze
    assert re.search(r"status 0 at freeze \[1(, 1)*\] check servers 1", done.stderr), done.stderr[
        -3000:
    ]
