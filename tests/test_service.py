"""Running as a service: a real Prefect server on 127.0.0.1 backed by a real PostgreSQL,
the deployments of prefect.yaml, process workers, the report artifact and the UI.

Needs PostgreSQL's server binaries (`.ci/run` installs Debian's `postgresql`); without them
the tests skip and say so. Lanes use the quick test responders (tests/role_doubles.py).
"""

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from tasks.gpu_pool import DevicePool, Devices

from .conftest import EXAMPLES, ROOT
from .role_doubles import QUICK

pytestmark = pytest.mark.slow

PREFECT = str(Path(sys.executable).parent / "prefect")
SERVICE = ROOT / "deployments" / "service.sh"  # the README's service section, as one script


def pg_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_postgres(cmd: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; CI runs as root.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def http_get(url: str, timeout: float = 5) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.read().decode(errors="replace")


def wait_for(predicate, timeout: float, what: str, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: process exited with {proc.returncode}")
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"{what} did not happen within {timeout:g} s")


@pytest.fixture(scope="module")
def postgres():
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


class Service:
    """A Prefect server and the processes started against it; everything stops at the end."""

    def __init__(self, database: dict, workdir: Path):
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PREFECT_HOME": str(workdir / "prefect-home"),
            "PREFECT_API_URL": f"{self.url}/api",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_WORKER_QUERY_SECONDS": "1",
        }
        # What deployments/service.sh (the README's service section) reads.
        self.env.update(
            PGHOST="127.0.0.1",
            PGPORT=str(database["port"]),
            BAKEOFF_SERVICE_DIR=str(workdir / "service-state"),
            BAKEOFF_SERVER_PORT=str(self.port),
        )
        self.server_env = dict(self.env)
        del self.server_env["PREFECT_API_URL"]

    def script(self, *args: str, env: dict | None = None, prefix=()) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*prefix, str(SERVICE), *args],
            cwd=ROOT,
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def start(self, args: list[str], env: dict, log: str) -> subprocess.Popen:
        out = open(self.workdir / log, "w")
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def prefect(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [PREFECT, *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert proc.returncode == 0, f"prefect {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def worker(self, name: str, queue: str, slots: int = 1):
        env = {
            **self.env,
            "BAKEOFF_HOST": name,
            "BAKEOFF_LOCK_DIR": str(self.workdir / f"locks-{name}"),
            "BAKEOFF_CPU_SLOTS": str(slots),
        }
        args = [str(SERVICE), "worker", "cpu-local", queue, str(slots), "--name", name]
        return self.start(args, env, f"worker-{name}.log")

    def client(self):
        from prefect.client.orchestration import SyncPrefectClient

        return SyncPrefectClient(api=f"{self.url}/api")

    def stop(self):
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def service(postgres, tmp_path_factory):
    """The README's service section, run as its script: database, server, deploy, workers."""
    svc = Service(postgres, tmp_path_factory.mktemp("service"))
    try:
        made = svc.script("database")
        assert made.returncode == 0, made.stdout + made.stderr
        server = svc.start([str(SERVICE), "server"], svc.server_env, "server.log")
        wait_for(lambda: http_get(f"{svc.url}/api/health")[0] == 200, 120, "server start", server)
        deployed = svc.script("deploy")
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        svc.dispatcher = svc.worker("dispatcher", "default", slots=2)
        yield svc
    finally:
        svc.stop()


def test_the_server_listens_on_loopback_only_unless_the_api_is_authenticated(service):
    listening = set()  # (address, port) of every listening TCP socket, from the kernel's table
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port = local.split(":")
            if state == "0A" and int(port, 16) == service.port:
                listening.add(address)
    assert listening == {"0100007F"}, listening  # 127.0.0.1 only
    env = {**service.server_env, "BAKEOFF_SERVER_HOST": "0.0.0.0"}
    refused = service.script("server", env=env)
    assert refused.returncode == 2 and "PREFECT_SERVER_API_AUTH_STRING" in refused.stderr


def test_the_service_script_works_as_an_ordinary_user_without_home_or_user(service):
    """`deploy` again (it is idempotent) as `nobody` without capabilities, no $HOME, no $USER."""
    if os.geteuid() != 0:
        prefix = []
    elif shutil.which("unshare"):
        prefix = ["unshare", "--user", "--map-user=65534", "--map-group=65534"]
    else:
        pytest.skip("util-linux unshare is needed to drop root here")
    env = {k: v for k, v in service.env.items() if k not in ("HOME", "USER", "LOGNAME")}
    again = service.script("deploy", env=env, prefix=prefix)
    assert again.returncode == 0, again.stdout + again.stderr
    with service.client() as client:
        names = [a.name for a in client.read_automations()]
    assert names.count("bakeoff-crash-silent-runs") == 1, names


def test_the_readme_service_section_runs_only_the_tested_script():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Running as a service", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    commands = [ln.split("#")[0].strip() for ln in block.splitlines()]
    commands = [c for c in commands if c]
    allowed = ("deployments/service.sh ", "export PREFECT_API_URL=", "prefect deployment run ")
    assert commands and all(c.startswith(allowed) for c in commands), commands
    for pool in ("gpu-mi300", "gpu-h200", "cpu-local"):
        assert f"deployments/service.sh worker {pool}" in block, pool
    assert "0.0.0.0" not in block


def flow_run_id(output: str) -> str:
    for line in output.splitlines():
        if "UUID:" in line:
            return line.split("UUID:")[1].strip()
    raise AssertionError(f"no flow run id in:\n{output}")


def read_artifact(service: Service, key: str):
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with service.client() as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))
        )
    return found[0] if found else None


def test_deployment_runs_on_a_worker_and_publishes_the_report(service, tmp_path):
    run = service.prefect(
        "deployment",
        "run",
        "bakeoff/local",
        "--param",
        f"kernel_path={EXAMPLES / 'rmsnorm_torch'}",
        "--param",
        "mode=optimize",
        "--param",
        "budget=1",
        "--param",
        f"runs_root={tmp_path / 'runs'}",
        "--param",
        f"agents={json.dumps(QUICK)}",
        "--watch",
        "--watch-timeout",
        "400",
        timeout=450,
    )
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
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with service.client() as client:  # each phase's outcome, on the run the user opens
        only = LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id(run.stdout)]))
        said = "\n".join(log.message for log in client.read_logs(log_filter=only, limit=200))
    for phase in (
        "frozen baseline",
        "lane torch",
        "no winner" if "No winner" in report else "winner",
    ):
        assert phase in said, said
    status, html = http_get(service.url + "/")
    assert status == 200 and "<html" in html.lower() and "prefect" in html.lower()


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


def test_two_workers_share_the_lane_pool_and_a_killed_lane_gives_its_device_back(service, tmp_path):
    service.worker("w1", "lanes")
    service.worker("w2", "lanes")
    params = {
        "kernel_path": str(EXAMPLES / "rmsnorm_torch"),
        "mode": "bakeoff",
        "backends": ["triton"],
        "budget": 1,
        "runs_root": str(tmp_path / "runs"),
        "dispatch": "deployment",
        "lane_deployment": "lane/local",
        "agents": {**QUICK, "author": "tests.role_doubles:author_kills_its_process_in_triton"},
    }
    service.prefect(
        "deployment",
        "run",
        "bakeoff/local",
        "--params",
        json.dumps(params),
        "--watch",
        "--watch-timeout",
        "400",
        timeout=450,
    )
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


def test_a_worker_stops_on_sigterm_and_its_run_does_not_stay_running(service, tmp_path):
    """Last in this file: it stops the dispatcher worker. A plain `kill` (SIGTERM) stops the
    worker promptly even while a lane is busy, and the bake-off's run leaves Running."""
    params = {
        "kernel_path": str(EXAMPLES / "rmsnorm_torch"),
        "mode": "optimize",
        "budget": 1,
        "runs_root": str(tmp_path / "runs"),
        "agents": {**QUICK, "optimizer": "tests.role_doubles:never_answers_async"},
    }
    run = service.prefect("deployment", "run", "bakeoff/local", "--params", json.dumps(params))
    rid = flow_run_id(run.stdout)

    def lane_running():
        found = list((tmp_path / "runs").glob("*/lanes/torch/progress.json"))
        return found and json.loads(found[0].read_text()).get("state") == "running"

    wait_for(lane_running, 300, "the lane to start", service.dispatcher)
    service.dispatcher.send_signal(signal.SIGTERM)
    started = time.monotonic()
    service.dispatcher.wait(60)
    assert time.monotonic() - started < 30, "the worker took too long to stop on SIGTERM"
    with service.client() as client:
        wait_for(lambda: not client.read_flow_run(rid).state.is_running(), 60, "the run to end")
        state = client.read_flow_run(rid).state
    assert state.is_crashed() or state.is_cancelled() or state.is_failed(), state
