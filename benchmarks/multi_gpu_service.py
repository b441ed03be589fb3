"""[K], stage 3: the bake-off with `dispatch=deployment` on one host, through the README's
service: a private PostgreSQL cluster on 127.0.0.1, `deployments/service.sh server` and
`deploy`, a dispatcher worker on the pool's `default` queue, and two workers on its `lanes`
queue, each seeing half the devices (its visible-devices variable set; CPU slots for a dry
run). The run is `prefect deployment run bakeoff/<kind> --param dispatch=deployment`, watched
to its end. What it reads back: the run's exit and wall time, each lane's worker (host),
device and lease, the winner, and the device pools' journals (on GPUs one lock directory for
the host, device ids being physical, so two holders of one device at once would show; CPU
slots are named alike on every worker, so there each worker has its own).

PostgreSQL's binaries come from the system (Debian's /usr/lib/postgresql/*/bin, or PATH) or
from the `pgserver` wheel (self-contained, cp312 manylinux2014), which can travel to a device
machine with the other wheels. As root, the cluster runs as user `postgres` when there is
one, else as a system user `bakeoff-pg` made for it.

    python3 -m benchmarks.multi_gpu_service PROBLEM [--cpu-slots 2] [--json OUT]

`benchmarks/multi_gpu.py --deployment` runs it after the single-process runs and compares the
winners.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVICE = ROOT / "deployments" / "service.sh"
POOLS = {"cuda": ("gpu-h200", "h200"), "rocm": ("gpu-mi300", "mi300"), "cpu": ("cpu-local", "local")}  # fmt: skip
VISIBLE = {"cuda": "CUDA_VISIBLE_DEVICES", "rocm": "ROCR_VISIBLE_DEVICES"}
PG_USER = "bakeoff-pg"


def pg_bin_dir() -> Path | None:
    """Where initdb, pg_ctl, postgres and psql are: the system's, else the pgserver wheel's."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    if shutil.which("initdb") and shutil.which("pg_ctl"):
        return Path(shutil.which("initdb")).resolve().parent
    try:
        import pgserver
    except ImportError:
        return None
    return Path(pgserver.__file__).parent / "pginstall" / "bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_runner() -> list[str]:
    """The prefix that runs PostgreSQL's programs: nothing unless root (it refuses root)."""
    if os.geteuid() != 0:
        return []
    try:
        user = pwd.getpwnam("postgres").pw_name
    except KeyError:
        user = PG_USER
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", user], check=True)
    return ["runuser", "-u", user, "--"]


class Postgres:
    """A throwaway cluster: trust authentication, 127.0.0.1 only, a database `prefect` owned
    by a role `prefect`."""

    def __init__(self, root: Path):
        bin_dir = pg_bin_dir()
        if bin_dir is None:
            raise SystemExit("multi_gpu_service: no PostgreSQL here (system or the pgserver wheel)")
        self.bin, self.root, self.port = bin_dir, root, free_port()
        self.run_as = pg_runner()
        root.mkdir(parents=True, exist_ok=True)
        if self.run_as:
            subprocess.run(["chown", "-R", self.run_as[2], str(root)], check=True)
        data = root / "data"
        self._pg("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        options = f"-p {self.port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200"
        self._pg("pg_ctl", "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
        self.data = data
        try:
            psql = ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-qd", "postgres"]  # fmt: skip
            self._pg(*psql, "-c", "CREATE ROLE prefect LOGIN", "-c", "CREATE DATABASE prefect OWNER prefect")  # fmt: skip
        except Exception:
            self.stop()
            raise

    def _pg(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [*self.run_as, str(self.bin / program), *args], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program}: exit {done.returncode}: {done.stderr[-600:]}")

    def stop(self) -> None:
        self._pg("pg_ctl", "-D", str(self.data), "-m", "fast", "stop")


class Service:
    """The README's service on this host, every process started against `workdir`."""

    def __init__(self, pg: Postgres, workdir: Path):
        self.workdir, self.port, self.procs = workdir, free_port(), []
        state = workdir / "service-state"
        state.mkdir(parents=True)
        os.chmod(state, 0o700)
        (state / "db.env").write_text("BAKEOFF_DB_PASSWORD=trusted\n")  # trust: any password
        os.chmod(state / "db.env", 0o600)
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PREFECT_HOME": str(workdir / "prefect-home"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_WORKER_QUERY_SECONDS": "2",
            "PGHOST": "127.0.0.1",
            "PGPORT": str(pg.port),
            "BAKEOFF_SERVICE_DIR": str(state),
            "BAKEOFF_SERVER_PORT": str(self.port),
        }
        self.url = f"http://127.0.0.1:{self.port}/api"

    def start(self, args: list[str], log: str, env: dict | None = None) -> subprocess.Popen:
        with open(self.workdir / log, "wb") as out:
            proc = subprocess.Popen(args, cwd=ROOT, env=env or self.env, stdout=out, stderr=out)
        self.procs.append(proc)
        return proc

    def up(self, timeout: float = 180.0) -> None:
        server = self.start([str(SERVICE), "server"], "server.log")
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start: see {self.workdir / 'server.log'}")
            time.sleep(1)
        self.env["PREFECT_API_URL"] = self.url
        done = subprocess.run([str(SERVICE), "deploy"], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=600)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"deploy: exit {done.returncode}: {done.stderr[-800:]}")

    def worker(self, name: str, pool: str, queue: str, limit: int, locks: Path, extra: dict):
        env = {**self.env, **extra, "BAKEOFF_HOST": name, "BAKEOFF_LOCK_DIR": str(locks)}
        args = [str(SERVICE), "worker", pool, queue, str(limit), "--name", name]
        self.start(args, f"worker-{name}.log", env)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def halves(kind: str, ids: list[str]) -> list[tuple[list[str], dict]]:
    """Each lanes worker's devices and environment: half the host's each."""
    half = max(1, len(ids) // 2)
    parts = [ids[:half], ids[half:]]
    if kind == "cpu":
        return [(p, {"BAKEOFF_CPU_SLOTS": str(len(p))}) for p in parts]
    return [(p, {VISIBLE[kind]: ",".join(p)}) for p in parts]


def run(problem: str, kind: str, ids: list[str], budget: int, backends: str | None, workdir: Path, timeout: float) -> dict:  # fmt: skip
    """One dispatched bake-off of `problem`; what it did, as multi_gpu's `outcome` reads it,
    plus each lane's worker and the host's lease journal."""
    from benchmarks.multi_gpu import outcome
    from kernel_bakeoff.tasks.check.gpu_pool import DevicePool, Devices, overlapping

    pool, suffix = POOLS[kind]
    pg = Postgres(workdir / "pg")
    service = Service(pg, workdir)
    try:
        service.up()
        # GPU ids are physical: one lock directory for the host. CPU slots are named cpu0..
        # on every worker, so each worker's are its own (and the journal is read per worker).
        lock_dirs = {name: workdir / ("locks" if kind != "cpu" else f"locks-{name}") for name in ("dispatcher", "lanes1", "lanes2")}  # fmt: skip
        dispatcher = {"BAKEOFF_CPU_SLOTS": str(len(ids))} if kind == "cpu" else {}
        service.worker("dispatcher", pool, "default", 1, lock_dirs["dispatcher"], dispatcher)
        for i, (part, env) in enumerate(halves(kind, ids)):
            name = f"lanes{i + 1}"
            service.worker(name, pool, "lanes", len(part), lock_dirs[name], env)
        runs = workdir / "runs"
        params = {
            "kernel_path": str(Path(problem).resolve()),
            "mode": "bakeoff",
            "budget": budget,
            "fresh": True,
            "runs_root": str(runs),
            "dispatch": "deployment",
            "lane_deployment": f"lane/{suffix}",
        }
        if backends:
            params["backends"] = backends.split(",")
        prefect = Path(sys.executable).parent / "prefect"
        argv = [
            str(prefect) if prefect.exists() else "prefect",
            "deployment",
            "run",
            f"bakeoff/{suffix}",
            "--params",
            json.dumps(params),
        ]
        argv += ["--watch", "--watch-timeout", str(int(timeout))]
        started = time.monotonic()
        done = subprocess.run(argv, cwd=ROOT, env=service.env, capture_output=True, text=True, timeout=timeout + 60)  # fmt: skip
        wall = time.monotonic() - started
        run_dirs = sorted(runs.glob("*/report.json"))
        result = outcome(run_dirs[0].parent if run_dirs else runs / "none", done.returncode, wall)
        if run_dirs:
            report = json.loads(run_dirs[0].read_text())
            hosts = {lane["key"]: (lane.get("lease") or {}).get("host") for lane in report["lanes"]}
            for lane in result["lanes"]:
                lane["worker"] = hosts.get(lane["lane"])
        if done.returncode != 0:
            result["log_tail"] = (done.stdout + done.stderr)[-800:]
        journal, clashes = [], []
        for locks in sorted(set(lock_dirs.values())):
            leases = DevicePool(Devices(kind, tuple(ids)), lock_dir=locks).leases()
            journal += leases
            clashes += overlapping(leases)
        result.update(leases=journal, overlapping=clashes)
        return result
    finally:
        service.stop()
        pg.stop()


def main(argv: list[str] | None = None) -> int:
    from benchmarks.multi_gpu import run_arguments
    from kernel_bakeoff.tasks.check.gpu_pool import detect

    ap = run_arguments(__doc__)
    args = ap.parse_args(argv)
    devices = detect(args.cpu_slots)
    if len(devices.ids) < 2:
        print(f"multi_gpu_service: one device here ({list(devices.ids)})", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="multi-gpu-service-"))
    os.chmod(work, 0o755)
    result = run(args.problem, devices.kind, list(devices.ids), args.budget, args.backends, work, args.timeout_s)  # fmt: skip
    lanes = ", ".join(f"{x['lane']}:{x.get('worker')}/{x['device']}/{x['lease_s']}" for x in result["lanes"] if x["device"])  # fmt: skip
    print(f"dispatch=deployment: exit {result['exit']}, {result['wall_s']} s, winner {result['winner']}; "
          f"lanes (worker/device/lease s) {lanes}; {len(result['leases'])} leases, "
          f"{len(result['overlapping'])} overlapping")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str))
    return 0 if result["exit"] == 0 and not result["overlapping"] else 1


if __name__ == "__main__":
    sys.exit(main())
