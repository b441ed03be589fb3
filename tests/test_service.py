"""Running as a service: a real Prefect server on 127.0.0.1 backed by a real PostgreSQL,
the deployments of prefect.yaml, process workers, the report artifact and the UI.

Needs PostgreSQL's server binaries (`.ci/run` installs Debian's `postgresql`); without them
the tests skip and say so. Lanes use the quick test responders (tests/role_doubles.py).
"""

import base64
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

from kernel_bakeoff.tasks.check.gpu_pool import DevicePool, Devices

from .conftest import ROOT, seed_frozen
from .role_doubles import QUICK
from .service_env import (
    PREFECT,
    SERVICE,
    Service,
    alive,
    as_postgres,
    automation,
    automation_message,
    bakeoff_params,
    children,
    flow_run_id,
    free_port,
    http_get,
    kill_tree,
    lane_state,
    path_without,
    pg_bin,
    read_artifact,
    readme_service_commands,
    run_logs,
    run_to_the_end,
    start_run,
    unprivileged,
    wait_for,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def postgres():
    if os.geteuid() != 0:  # the README's `service.sh database` makes a role: root or postgres
        if os.environ.get("CI"):
            pytest.fail("CI runs the service tests as root (service.sh database makes a role)")
        pytest.skip("service.sh database runs as root or postgres (README); this user is neither")
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        if os.environ.get("CI"):
            pytest.fail("CI must have PostgreSQL's server binaries (.ci/run installs them)")
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed here")
    root = Path(tempfile.mkdtemp(prefix="bakeoff-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", free_port()
    subprocess.run(
        as_postgres([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200"
    start = [pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"]
    subprocess.run(as_postgres(start), check=True, capture_output=True)
    try:
        createdb = pg_bin("createdb")
        subprocess.run(
            as_postgres(
                [createdb, "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "prefect"]
            ),
            check=True,
            capture_output=True,
        )
        yield {"url": f"postgresql+asyncpg://postgres@127.0.0.1:{port}/prefect", "port": port}
    finally:
        subprocess.run(as_postgres([pg_ctl, "-D", str(data), "-m", "fast", "stop"]), check=False)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def service(postgres, tmp_path_factory):
    """The README's service section, run as its script: database, server, deploy, workers."""
    svc = Service(postgres, tmp_path_factory.mktemp("service"))
    try:
        made = svc.script("database")
        assert made.returncode == 0, made.stdout + made.stderr
        svc.login()
        server = svc.start([str(SERVICE), "server"], svc.server_env, "server.log")
        wait_for(lambda: http_get(f"{svc.url}/api/health")[0] == 200, 120, "server start", server)
        deployed = svc.script("deploy")
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        svc.deployed = deployed.stdout
        svc.dispatcher = svc.worker("dispatcher", "default", slots=2)
        yield svc
    finally:
        svc.stop()


def test_the_server_listens_on_loopback_only_and_requires_its_login(service):
    listening = set()  # (address, port) of every listening TCP socket, from the kernel's table
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port = local.split(":")
            if state == "0A" and int(port, 16) == service.port:
                listening.add(address)
    assert listening == {"0100007F"}, listening  # 127.0.0.1 only
    # ... and even there the API wants the login that `database` generated into db.env: a
    # local process without it (a candidate out of its box) can change nothing.
    with pytest.raises(urllib.error.HTTPError) as refused:
        http_get(f"{service.url}/api/version")
    assert refused.value.code == 401
    request = urllib.request.Request(f"{service.url}/api/version")
    login = base64.b64encode(service.env["PREFECT_API_AUTH_STRING"].encode()).decode()
    request.add_header("Authorization", f"Basic {login}")
    with urllib.request.urlopen(request, timeout=5) as resp:
        assert resp.status == 200


def test_the_service_script_works_as_an_ordinary_user_without_home_or_user(service):
    """`deploy` again (it is idempotent) as `nobody` without capabilities, no $HOME, no $USER."""
    env = {k: v for k, v in service.env.items() if k not in ("HOME", "USER", "LOGNAME")}
    again = service.script("deploy", env=env, prefix=unprivileged())
    assert again.returncode == 0, again.stdout + again.stderr
    with service.client() as client:
        names = [a.name for a in client.read_automations()]
    assert names.count("bakeoff-crash-silent-runs") == 1, names


def test_the_readme_service_section_runs_only_the_tested_script():
    commands = readme_service_commands()
    allowed = ("deployments/service.sh ", "export PREFECT_API_URL=", "prefect deployment run ")
    assert commands and all(c.startswith(allowed) for c in commands), commands
    for pool in ("gpu-mi300", "gpu-h200", "cpu-local"):
        assert f"deployments/service.sh worker {pool} default" in commands, pool
    assert not any("0.0.0.0" in c for c in commands)


def test_deploy_names_the_readmes_worker_commands_for_each_pool(service):
    hints = [ln.strip() for ln in service.deployed.splitlines() if "service.sh worker" in ln]
    for pool in ("gpu-mi300", "gpu-h200", "cpu-local"):
        for queue in ("default", "lanes"):
            assert f"deployments/service.sh worker {pool} {queue}" in hints, hints
    assert set(hints) <= set(readme_service_commands()), hints


def test_the_readmes_bakeoff_runs_on_a_worker_and_publishes_the_report(service, tmp_path):
    """Step 5 of the README's block as written, after its export line, in a shell where
    nothing else set PREFECT_API_URL (without it prefect starts a server of its own, which
    has no deployment). The test's server listens on its own port, not 4200."""
    lines = [
        c.replace("127.0.0.1:4200/", f"127.0.0.1:{service.port}/")
        for c in readme_service_commands()
        if c.startswith(("export PREFECT_API_URL=", "prefect deployment run bakeoff/local "))
    ]
    assert lines[-1].startswith("prefect deployment run "), lines
    # The README's request, with the test's settings over it: the request is one parameter,
    # so they go into it rather than after it. $PWD is this checkout, where bash runs it.
    words = shlex.split(lines[-1].replace("$PWD", str(ROOT)))
    [at] = [i for i, w in enumerate(words) if w.startswith("request=")]
    request = json.loads(words[at].removeprefix("request="))
    assert request["kernel_path"] == str(ROOT / "examples" / "rmsnorm_torch"), request
    extra = {"mode": "optimize", "budget": 1, "runs_root": str(tmp_path / "runs"), "agents": QUICK}
    words[at] = "request=" + json.dumps(request | extra)
    lines[-1] = shlex.join(words) + " --watch-timeout 400"
    env = {k: v for k, v in service.env.items() if k != "PREFECT_API_URL"}
    env["PATH"] = f"{Path(PREFECT).parent}{os.pathsep}{env['PATH']}"  # the venv activated
    run = subprocess.run(
        ["bash", "-c", "\n".join(lines)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=450,
    )
    assert run.returncode == 0, f"{lines}\n{run.stdout}\n{run.stderr}"
    with service.client() as client:
        state = client.read_flow_run(flow_run_id(run.stdout)).state
    assert state.is_completed(), (
        f"{state}\n{(service.workdir / 'worker-dispatcher.log').read_text()[-4000:]}"
    )
    report = next((tmp_path / "runs").glob("rmsnorm-*/report.md")).read_text()
    artifact = read_artifact(service, "bakeoff-rmsnorm-local-report")
    assert artifact is not None and artifact.data == report
    assert str(artifact.flow_run_id) == flow_run_id(run.stdout)  # on the run the user opens
    assert read_artifact(service, "bakeoff-rmsnorm-local-candidates") is not None
    said = run_logs(service, flow_run_id(run.stdout))  # each phase's outcome, on that run
    for phase in (
        "frozen baseline",
        "lane torch",
        "no winner" if "No winner" in report else "winner",
    ):
        assert phase in said, said
    status, html = http_get(service.url + "/")
    assert status == 200 and "<html" in html.lower() and "prefect" in html.lower()


def test_a_lanes_worker_that_cannot_count_its_devices_says_to_give_the_limit(tmp_path):
    """On a host without nvidia-smi or /dev/dri, `worker gpu-h200 lanes` once exited 127 (and
    gpu-mi300 1) without a word, under set -e."""
    if list(Path("/dev").glob("dri/renderD*")):
        pytest.skip("this host has /dev/dri render nodes")
    env = {**os.environ, "PATH": path_without(tmp_path / "bin", "nvidia-smi")}
    for pool, missing in (("gpu-h200", "nvidia-smi"), ("gpu-mi300", "/dev/dri")):
        said = subprocess.run(
            [str(SERVICE), "worker", pool, "lanes"], env=env, capture_output=True, text=True
        )
        assert said.returncode == 2 and said.stderr.count("\n") == 1, said.stderr
        assert missing in said.stderr and "third argument" in said.stderr, said.stderr


def test_database_as_a_user_without_sudo_says_so_and_writes_no_password(tmp_path):
    """It once wrote a fresh db.env before finding it could not create the role, so a later
    `server` failed with `password authentication failed`."""
    state = tmp_path / "state"
    env = {
        **os.environ,
        "BAKEOFF_SERVICE_DIR": str(state),
        "PATH": path_without(tmp_path / "bin", "sudo"),
    }
    said = subprocess.run(
        [*unprivileged(), str(SERVICE), "database"], env=env, capture_output=True, text=True
    )
    assert said.returncode == 2 and said.stderr.count("\n") == 1, said.stderr
    assert "as root or as the postgres user" in said.stderr, said.stderr
    assert not (state / "db.env").exists()


def test_database_says_to_start_postgresql_when_its_socket_is_missing(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("runs `database` as root, who may act as postgres")
    env = {k: v for k, v in os.environ.items() if k != "PGHOST"}
    env.update(PGPORT=str(free_port()), BAKEOFF_SERVICE_DIR=str(tmp_path / "state"))
    said = subprocess.run([str(SERVICE), "database"], env=env, capture_output=True, text=True)
    assert said.returncode == 2 and said.stderr.count("\n") == 1, said.stderr
    assert "PostgreSQL is not running" in said.stderr and "pg_ctlcluster" in said.stderr
    assert not (tmp_path / "state" / "db.env").exists()


def test_two_workers_stopped_at_once_both_stop_their_prefect_worker(service, tmp_path):
    """`kill PID1 PID2` of two worker scripts once left both `prefect worker`s running: the
    stop handler listed processes from /proc under set -e and gave up when one of them exited
    before it was read. Processes come and go meanwhile, as on a busy host. The workers serve
    gpu-h200's lanes with their limit given, on a host without nvidia-smi."""
    env = {**service.env, "PATH": path_without(tmp_path / "bin", "nvidia-smi")}
    scripts = {}
    for name in ("pair-1", "pair-2"):
        args = [str(SERVICE), "worker", "gpu-h200", "lanes", "2", "--name", name]
        scripts[name] = service.start(args, env, f"worker-{name}.log")
    for name, script in scripts.items():
        log = service.workdir / f"worker-{name}.log"
        started = lambda log=log, name=name: f"Worker {name!r} started" in log.read_text()  # noqa: E731
        wait_for(started, 60, name, script)
    workers = [pid for script in scripts.values() for pid in children(script.pid)]
    assert len(workers) == 2, workers
    burst = "for i in 1 2 3 4 5 6 7 8; do /bin/true & done; wait"  # short-lived processes
    churn = subprocess.Popen(["bash", "-c", f"while :; do {burst}; done"])
    time.sleep(0.5)
    try:
        subprocess.run(["kill", *(str(s.pid) for s in scripts.values())], check=True)
        for script in scripts.values():
            script.wait(30)  # 10 s for the runs, 15 s for the worker, and more
    finally:
        churn.kill()
        churn.wait()
    left = [pid for pid in workers if alive(pid)]
    assert not left, f"prefect workers left running: {left}"


def test_prefect_yaml_deploys_every_pool_and_the_nightly_schedule(service):
    with service.client() as client:
        names = {
            f"{client.read_flow(d.flow_id).name}/{d.name}": d for d in client.read_deployments()
        }
    assert {"bakeoff/mi300", "bakeoff/h200", "bakeoff/local", "lane/h200", "lane/local"} <= set(
        names
    )
    assert names["bakeoff/h200"].work_pool_name == "gpu-h200"
    assert names["lane/mi300"].work_queue_name == "lanes"
    for kind, pool in (("mi300", "gpu-mi300"), ("h200", "gpu-h200"), ("local", "cpu-local")):
        nightly = names[f"regression/nightly-{kind}"]  # every kind of host has its nightly run
        assert nightly.work_pool_name == pool
        assert [s.schedule.cron for s in nightly.schedules] == ["0 2 * * *"]
        assert nightly.parameters["artifact_key"] == f"nightly-bakeoff-{kind}"
    # ... and the test's server schedules none of them (Service: its scheduler is off), so a
    # suite run across 02:00 UTC starts no nightly bake-off on the test's workers
    nightlies = [d.id for name, d in names.items() if name.startswith("regression/")]
    with service.client() as client:
        scheduled = client.read_flow_runs(
            deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=nightlies))
        )
    assert not scheduled, [(r.name, r.state_name, r.expected_start_time) for r in scheduled]


def test_two_workers_share_the_lane_pool_and_a_killed_lane_gives_its_device_back(
    service, frozen_rmsnorm, tmp_path
):
    seed_frozen(frozen_rmsnorm, tmp_path / "runs", "bakeoff")
    service.worker("w1", "lanes")
    service.worker("w2", "lanes")
    params = bakeoff_params(
        tmp_path / "runs", "bakeoff", author="author_kills_its_process_in_triton"
    )
    params.update(backends=["triton"], dispatch="deployment", lane_deployment="lane/local")
    run_to_the_end(service, params)
    result = json.loads(next((tmp_path / "runs").glob("rmsnorm-*/report.json")).read_text())
    lanes = {lane["key"]: lane for lane in result["lanes"]}
    assert lanes["torch"]["status"] == "completed"
    killed = lanes["triton"]
    assert killed["status"] == "failed" and "CRASHED" in killed["reason"].upper()

    # The killed lane held cpu0 of its worker's host: its holder record is still in the lock
    # file (a clean release empties it), yet the kernel has released the lock.
    holders = {}
    for host in ("w1", "w2"):
        lock_dir = service.workdir / f"locks-{host}"
        record = (lock_dir / "cpu-cpu0.lock").read_text() if lock_dir.is_dir() else ""
        holders[host] = json.loads(record) if record else None
        pool = DevicePool(Devices("cpu", ("cpu0",)), lock_dir=lock_dir)
        assert pool.holders() == {"cpu0": None}
    crashed_on = next(h for h, rec in holders.items() if rec and "triton" in rec["label"])
    assert lanes["torch"]["lease"]["host"] != crashed_on  # the two lanes ran on both workers


def test_a_cancelled_run_is_cancelled_promptly_and_the_next_run_resumes_it(
    service, frozen_rmsnorm, tmp_path
):
    """`prefect flow-run cancel` on a bake-off busy in a lane: Cancelled within a minute (the
    issue saw it stay Cancelling for 8 minutes), and the same bake-off run again says so."""
    runs = tmp_path / "runs"
    seed_frozen(frozen_rmsnorm, runs)
    params = bakeoff_params(runs, optimizer="never_answers_async")
    rid = start_run(service, params)
    wait_for(lambda: lane_state(runs, "torch") == "running", 300, "the lane", service.dispatcher)
    service.prefect("flow-run", "cancel", rid)
    asked = time.monotonic()
    with service.client() as client:
        wait_for(lambda: client.read_flow_run(rid).state.is_final(), 120, "the run to end")
        state = client.read_flow_run(rid).state
    took = time.monotonic() - asked
    assert state.is_cancelled(), f"{state}: {state.message}"
    assert took < 60, f"Cancelled only {took:.0f} s after the cancel"
    print(f"Cancelled {took:.1f} s after `prefect flow-run cancel`")

    _, said = run_to_the_end(service, bakeoff_params(runs))
    assert f"resumed: an earlier run ({rid[:8]}) stopped in phase 'lanes'" in said, said


def test_a_worker_stops_on_sigterm_and_its_run_does_not_stay_running(
    service, frozen_rmsnorm, tmp_path
):
    """It stops the dispatcher worker (the tests after it start their own). A plain `kill`
    (SIGTERM) stops the worker promptly even while a lane is busy, and the bake-off's run
    leaves Running."""
    runs = tmp_path / "runs"
    seed_frozen(frozen_rmsnorm, runs)
    params = bakeoff_params(runs, optimizer="never_answers_async")
    rid = start_run(service, params)
    wait_for(lambda: lane_state(runs, "torch") == "running", 300, "the lane", service.dispatcher)
    service.dispatcher.send_signal(signal.SIGTERM)
    started = time.monotonic()
    service.dispatcher.wait(60)
    assert time.monotonic() - started < 30, "the worker took too long to stop on SIGTERM"
    with service.client() as client:
        wait_for(lambda: not client.read_flow_run(rid).state.is_running(), 60, "the run to end")
        state = client.read_flow_run(rid).state
    assert state.is_crashed() or state.is_cancelled() or state.is_failed(), state


def test_a_worker_killed_alone_leaves_its_run_to_finish(service, frozen_rmsnorm, tmp_path):
    """SIGKILL of the worker process only (its runs live on, as after an OOM kill of it): the
    run it started loses the pipe its output went to, yet finishes, Completed, its candidates
    checked. (Prefect 3.9 streams a run's output through its worker; the issue saw the run
    crash with a BrokenPipeError.)"""
    service.stop_workers("default")
    go, runs = tmp_path / "go", tmp_path / "runs"
    seed_frozen(frozen_rmsnorm, runs)
    params = bakeoff_params(runs, optimizer="waits_for_go_file")
    script = service.worker("lonely", "default", env={"BAKEOFF_TEST_GO_FILE": str(go)})
    rid = start_run(service, params)
    wait_for(lambda: lane_state(runs, "torch") == "running", 300, "the lane", script)
    [worker] = children(script.pid)  # `prefect worker start`; the run's process is under it
    assert children(worker), "the run's process is not under the worker"
    os.kill(worker, signal.SIGKILL)
    script.wait(30)
    go.touch()
    with service.client() as client:
        wait_for(lambda: client.read_flow_run(rid).state.is_final(), 300, "the run to end")
        state = client.read_flow_run(rid).state
    assert state.is_completed(), f"{state}: {state.message}"
    result = json.loads(next(runs.glob("*/report.json")).read_text())
    [lane] = result["lanes"]
    assert lane["status"] == "completed" and lane["candidates"], lane
    assert all(c["verdict"]["status"] == "PASSED" for c in lane["candidates"]), lane


def test_deploy_made_each_automation_of_the_readme_once(service):
    with service.client() as client:
        for name in ("bakeoff-crash-silent-runs", "bakeoff-cancel-silent-runs"):
            assert len(client.read_automations_by_name(name)) == 1, name


def test_a_cancel_of_a_run_whose_host_died_ends_it_cancelled(service, frozen_rmsnorm, tmp_path):
    """The README's cancel automation, with its window cut to 10 s: a run whose worker died
    with every process under it is cancelled; no worker is left to stop it, so without the
    automation it would stay Cancelling until the crash automation fired."""
    service.prefect(
        "automation", "create", "--from-file",
        str(made(tmp_path, automation("bakeoff-cancel-silent-runs", {60: 10}))),
    )  # fmt: skip
    service.stop_workers("default")
    runs = tmp_path / "runs"
    seed_frozen(frozen_rmsnorm, runs)
    params = bakeoff_params(runs, optimizer="never_answers_async")
    doomed = service.worker("doomed-cancel", "default")
    rid = start_run(service, params)
    wait_for(lambda: lane_state(runs, "torch") == "running", 300, "the lane", doomed)
    kill_tree(doomed.pid)
    doomed.wait(10)
    service.prefect("flow-run", "cancel", rid)
    asked = time.monotonic()
    with service.client() as client:
        wait_for(lambda: client.read_flow_run(rid).state.is_final(), 10 + 45, "the run to end")
        state = client.read_flow_run(rid).state
    assert state.is_cancelled(), f"{state}: {state.message}"
    assert state.message == automation_message("bakeoff-cancel-silent-runs"), state
    print(f"Cancelled {time.monotonic() - asked:.0f} s after the cancel of a dead run")


def made(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "automation.yaml"
    path.write_text(text)
    return path


CRASH_WINDOW_S = 40  # Prefect 3.9 beats every 30 s at the most; the README's window is 120 s


def test_a_run_whose_host_dies_is_marked_crashed_and_the_next_run_resumes(
    service, frozen_rmsnorm, tmp_path
):
    """The README's crash automation, made by its one command from deployments/automations.yaml
    with the window cut to CRASH_WINDOW_S, marks a run Crashed once its worker and every
    process under it are SIGKILLed (nothing is left to report); the next run of the same
    bake-off reuses the lane that finished and says it resumed."""
    name = "bakeoff-crash-silent-runs"
    quick = automation(name, {120: CRASH_WINDOW_S})
    service.prefect("automation", "create", "--from-file", str(made(tmp_path, quick)))
    service.stop_workers("default")  # run alone (-k): this test's workers take its runs
    runs = tmp_path / "runs"
    seed_frozen(frozen_rmsnorm, runs, "bakeoff")
    # the triton lane's reviewer never answers while BAKEOFF_TEST_REVIEWER_DOWN is set
    params = bakeoff_params(runs, "bakeoff", reviewer="reviewer_down_in_triton")
    stuck = {"BAKEOFF_TEST_REVIEWER_DOWN": "1"}  # two CPU slots: the torch lane never waits
    doomed = service.worker("doomed", "default", slots=2, env=stuck)
    rid = start_run(service, params)

    def torch_done_triton_stuck():
        return lane_state(runs, "torch") == "completed" and lane_state(runs, "triton") == (
            "reviewing"
        )

    wait_for(torch_done_triton_stuck, 300, "the torch lane to finish", doomed)
    try:
        with service.client() as client:
            assert client.read_flow_run(rid).state.is_running()
            killed = kill_tree(doomed.pid)
            doomed.wait(10)
            dead_at = time.monotonic()
            assert len(killed) > 2, killed  # the worker script, the worker, the run's process
            wait_for(
                lambda: client.read_flow_run(rid).state.is_crashed(),
                CRASH_WINDOW_S + 45,
                "the automation to mark the silent run Crashed",
            )
            crashed = client.read_flow_run(rid).state
    finally:  # the tests after this one see only the README's automations
        service.prefect("--no-prompt", "automation", "delete", f"{name}-test")
    took = time.monotonic() - dead_at
    assert crashed.message == automation_message(name), crashed  # the automation's action
    print(f"marked Crashed {took:.0f} s after its host died (window {CRASH_WINDOW_S} s)")

    service.worker("revived", "default", slots=2)  # the reviewer answers again: same settings
    _, said = run_to_the_end(service, params)
    assert f"resumed: an earlier run ({rid[:8]}) stopped in phase 'lanes'" in said, said
    assert "reusing finished lane(s) torch" in said, said
    assert "Discover (reused): " in said and "lane triton: completed" in said, said
    result = json.loads(next(runs.glob("rmsnorm-*/report.json")).read_text())
    lanes = {lane["key"]: lane for lane in result["lanes"]}
    assert lanes["torch"]["reused"] and lanes["torch"]["status"] == "completed", lanes
    assert not lanes["triton"]["reused"] and lanes["triton"]["status"] == "completed", lanes


def test_a_bakeoff_killed_during_discover_keeps_the_checks_it_finished(
    service, frozen_rmsnorm, tmp_path
):
    """A bake-off's process killed (SIGKILL, with everything under it) after Discover's first
    check: the next run takes that check as it was and checks only the second."""
    seed_frozen(frozen_rmsnorm, tmp_path / "runs", "bakeoff")
    params = bakeoff_params(tmp_path / "runs", "bakeoff", planner="discover_checks_two_copies")
    script = (
        "from kernel_bakeoff.flows.bakeoff import bakeoff; from kernel_bakeoff.tasks.models.request import BakeoffRequest; "
        f"bakeoff(BakeoffRequest(**{params!r}))"
    )
    env = {**service.env, "BAKEOFF_LOCK_DIR": str(tmp_path / "locks")}
    first = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**env, "BAKEOFF_TEST_HANG_IN_DISCOVER": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    saved = tmp_path / "runs"

    def first_check_saved():
        return list(saved.glob("*/discover/results/*discover-copy0*.json"))

    wait_for(first_check_saved, 300, "Discover's first check", first)
    [kept] = first_check_saved()
    verdict = json.loads(kept.read_text())["verdict"]
    kill_tree(first.pid)
    first.wait(10)

    again = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    [run_dir] = [p for p in saved.iterdir() if p.is_dir()]
    log = (run_dir / "discover" / "lane.log").read_text()
    assert "kept discover-copy0 from the interrupted run: PASSED" in log, log
    assert "discover-copy1" in log and "kept discover-copy1" not in log, log
    outcome = json.loads((run_dir / "discover" / "outcome.json").read_text())
    measured = {m["candidate"]["name"]: m["verdict"] for m in outcome["plan"]["measured"]}
    assert measured["discover-copy0"] == verdict  # the very check, not a new one
    assert measured["discover-copy1"]["status"] == "PASSED"
