"""What tests/test_service.py runs against: PostgreSQL's binaries, a Prefect server and the
processes started against it (deployments/service.sh, the README's service section), and the
client calls its tests read results with."""

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .conftest import ROOT

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


def readme_service_commands() -> list[str]:
    """The commands of the README's "Running as a service" block, comments left out."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Running as a service", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    commands = [ln.split("#")[0].strip() for ln in block.splitlines()]
    return [c for c in commands if c]


def path_without(bin_dir: Path, *tools: str) -> str:
    """A PATH of one directory that has every command of this PATH and the test's prefect,
    but `tools` (a host without nvidia-smi, a user without sudo)."""
    bin_dir.mkdir()
    for where in [str(Path(PREFECT).parent), *os.environ["PATH"].split(os.pathsep)]:
        for tool in Path(where).glob("*"):
            link = bin_dir / tool.name
            if tool.name not in tools and not link.is_symlink():
                link.symlink_to(tool)
    return str(bin_dir)


def unprivileged() -> list[str]:
    """The prefix that runs a command as `nobody` without capabilities when the test is root."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("unshare"):
        import pytest

        pytest.skip("util-linux unshare is needed to drop root here")
    return ["unshare", "--user", "--map-user=65534", "--map-group=65534"]


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


class Service:
    """A Prefect server and the processes started against it; everything stops at the end."""

    def __init__(self, database: dict, workdir: Path):
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.workers: dict[str, tuple[str, subprocess.Popen]] = {}  # name -> (queue, script)
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
        # `deploy` makes prefect.yaml's nightly schedules (02:00 UTC); with the server's
        # scheduler on, a suite run across 02:00 had the test's workers start the nightly
        # regression bake-off, in the checkout's runs/nightly/ (seen in a CI-style run at
        # 952a363). The schedules stay on the deployments, where the tests read them.
        self.server_env["PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED"] = "false"

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

    def worker(self, name: str, queue: str, slots: int = 1, env: dict | None = None):
        env = {
            **self.env,
            **(env or {}),
            "BAKEOFF_HOST": name,
            "BAKEOFF_LOCK_DIR": str(self.workdir / f"locks-{name}"),
            "BAKEOFF_CPU_SLOTS": str(slots),
        }
        args = [str(SERVICE), "worker", "cpu-local", queue, str(slots), "--name", name]
        proc = self.start(args, env, f"worker-{name}.log")
        self.workers[name] = (queue, proc)
        return proc

    def stop_workers(self, queue: str) -> None:
        """SIGTERM every live worker of `queue`, so the next one started takes its runs."""
        live = [p for q, p in self.workers.values() if q == queue and p.poll() is None]
        for proc in live:
            proc.send_signal(signal.SIGTERM)
        for proc in live:
            proc.wait(60)

    def login(self) -> None:
        """The API's login that `database` generated (db.env), for every client of the test."""
        db_env = Path(self.env["BAKEOFF_SERVICE_DIR"]) / "db.env"
        for line in db_env.read_text().splitlines():
            if line.startswith("BAKEOFF_API_AUTH_STRING="):
                self.env["PREFECT_API_AUTH_STRING"] = line.partition("=")[2]

    def client(self):
        from prefect.client.orchestration import SyncPrefectClient

        auth = self.env.get("PREFECT_API_AUTH_STRING")
        return SyncPrefectClient(api=f"{self.url}/api", auth_string=auth)

    def stop(self, grace_s: float = 5.0):
        """SIGINT to each process; whatever still runs after `grace_s` in all is killed with
        everything under it (nothing is tested here, and the last test's teardown waited 15 s)."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + grace_s
        for proc in self.procs:
            try:
                proc.wait(max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                tree, i = [proc.pid], 0
                while i < len(tree):
                    tree += children(tree[i])
                    i += 1
                for pid in tree:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass  # it ended meanwhile
                proc.wait()


def children(pid: int) -> list[int]:
    """The pids whose parent is `pid`, from the kernel's process table."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_tree(pid: int) -> list[int]:
    """SIGKILL a process and every descendant, as a host dying would: each is stopped first, so
    none can fork, reap or report in between. Returns the pids killed."""
    tree, frontier = [pid], [pid]
    while frontier:
        os.kill(frontier[0], signal.SIGSTOP)
        below = children(frontier[0])
        frontier = frontier[1:] + below
        tree += below
    for p in tree:
        os.kill(p, signal.SIGKILL)
    return tree


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


def bakeoff_params(runs: Path, mode: str = "optimize", **agents: str) -> dict:
    """A deployment run's parameters: rmsnorm_torch, budget 1, the quick test responders with
    `agents` (role -> responder in tests/role_doubles.py) in their place."""
    from .conftest import EXAMPLES
    from .role_doubles import QUICK

    roles = {role: f"tests.role_doubles:{name}" for role, name in agents.items()}
    return {
        "kernel_path": str(EXAMPLES / "rmsnorm_torch"),
        "mode": mode,
        "budget": 1,
        "runs_root": str(runs),
        "agents": {**QUICK, **roles},
    }


def lane_state(runs: Path, key: str) -> str | None:
    found = list(runs.glob(f"*/lanes/{key}/progress.json"))
    return json.loads(found[0].read_text()).get("state") if found else None


def run_logs(service: Service, rid: str) -> str:
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with service.client() as client:
        only = LogFilter(flow_run_id=LogFilterFlowRunId(any_=[rid]))
        return "\n".join(log.message for log in client.read_logs(log_filter=only, limit=200))


def start_run(service: Service, params: dict, deployment: str = "bakeoff/local") -> str:
    """A run of `deployment` with `params`, asked of the server through the client (what
    `prefect deployment run NAME --params ...` asks; that command itself, as the README gives
    it, is test_the_readmes_bakeoff_runs_on_a_worker_and_publishes_the_report's): its id. The
    command was an interpreter start and Prefect's imports, ~2-3 s under load, per run."""
    with service.client() as client:
        found = client.read_deployment_by_name(deployment)
        run = client.create_flow_run_from_deployment(found.id, parameters={"request": params})
    return str(run.id)


def run_to_the_end(service: Service, params: dict) -> tuple[str, str]:
    """Run bakeoff/local with `params` and wait for it to end Completed: its id and its log."""
    rid = start_run(service, params)
    with service.client() as client:
        wait_for(lambda: client.read_flow_run(rid).state.is_final(), 400, f"run {rid} to end")
        state = client.read_flow_run(rid).state
    assert state.is_completed(), f"{state}: {state.message}"
    # The run's process sends its logs in batches, and the state lands before the last batch:
    # the engine's own last line ("Finished in state ...") says every earlier one has arrived.
    wait_for(lambda: "Finished in state" in run_logs(service, rid), 60, f"run {rid}'s logs")
    return rid, run_logs(service, rid)


def automation(name: str, windows: dict[int, int], suffix: str = "-test") -> str:
    """One automation of deployments/automations.yaml as a file of its own, renamed with
    `suffix` and its window changed per `windows` (README's seconds -> the test's)."""
    text = (ROOT / "deployments" / "automations.yaml").read_text()
    head, *items = text.split("\n  - name: ")
    [item] = [i for i in items if i.startswith(f"{name}\n")]
    for readme, test in windows.items():
        assert f"within: {readme}\n" in item, item
        item = item.replace(f"within: {readme}\n", f"within: {test}\n")
    return "automations:\n  - name: " + item.replace(name, name + suffix, 1).rstrip() + "\n"


def automation_message(name: str) -> str:
    item = (ROOT / "deployments" / "automations.yaml").read_text().split(f"name: {name}\n")[1]
    return item.split("message:", 1)[1].strip().splitlines()[0].strip('"')
