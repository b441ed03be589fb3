"""Where a command's CPU goes, by kind of process: the test suite's figures in docs/testing.md.

    python -m benchmarks.suite_cpu [--json OUT] -- .venv/bin/python -m pytest -q -n auto ...
    python -m benchmarks.suite_cpu --servers OUT     # warm servers and their forks, from OUT

Runs the command and, every 0.5 s until it ends, reads every process's CPU time from /proc
(Linux). Each process is counted once, by its last reading, under the kind its command line
names (a check forked from a warm server carries the server's command line). A process that
lives less than one interval may be missed, so the total is a floor. Prints the seconds and
process counts by kind, the total, and the command's wall time; `--json` keeps every process, with its parent's pid and the test it was started under.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
KINDS = (  # (kind, a fragment of the command line), first match wins
    ("checks: warm servers and their forks", "kernel_bakeoff.scripts.forkserver"),
    ("pytest workers", "exec(eval(sys.stdin"),
    ("prefect server", "prefect.server"),
    ("prefect server", "uvicorn"),
    ("prefect worker", "worker start"),
    ("bakeoff run / check / freeze CLI", "kernel_bakeoff.flows.cli"),
    ("freeze and size probes", "kernel_bakeoff.scripts.freeze"),
    ("freeze and size probes", "kernel_bakeoff.scripts.sizes"),
    ("prefect CLI and flow runs", "prefect"),
    ("other python", "python"),
)
COMPILERS = {"cc1plus", "g++", "c++", "gcc", "cc1", "as", "ld", "collect2"}


def kind(command: str, comm: str) -> str:
    if comm in COMPILERS:
        return "C++ builds"
    if comm.startswith("postgres"):
        return "postgresql"
    return next((k for k, part in KINDS if part in command), f"other: {comm}")


def _current_test(pid: str) -> str | None:
    """The test a process was started under: pytest sets PYTEST_CURRENT_TEST while each test
    runs, and the processes it starts inherit it (a scrubbed environment does not: follow
    `ppid`). None where the environment cannot be read."""
    try:
        for var in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if var.startswith(b"PYTEST_CURRENT_TEST="):
                return var.partition(b"=")[2].decode(errors="replace")
    except OSError:
        pass
    return None


def sample(seen: dict, skip: int) -> None:
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == skip:
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            comm, fields = (
                stat[stat.index("(") + 1 : stat.rindex(")")],
                stat[stat.rindex(")") + 2 :],
            )
            fields = fields.split()
            key = (int(entry), fields[19])  # pid and start time: a reused pid is another process
            cpu = (int(fields[11]) + int(fields[12])) / TICK
            if key not in seen:
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
                seen[key] = {
                    "pid": int(entry),
                    "ppid": int(fields[1]),
                    "comm": comm,
                    "cmd": raw.replace(b"\0", b" ").decode(errors="replace")[:300],
                    "test": _current_test(entry),
                }
            seen[key]["cpu_s"] = cpu
        except (OSError, ValueError, IndexError):
            continue  # it ended while being read


def servers(processes: list[dict]) -> None:
    """The warm servers of a `--json` record: their forks (judges, candidates, untrusted steps),
    then the servers themselves (start-up, and the forking they do) by what started them."""
    by_pid = {p["pid"]: p for p in processes}  # a reused pid: the last one seen

    def is_server(p: dict | None) -> bool:
        return p is not None and "kernel_bakeoff.scripts.forkserver" in p["cmd"]

    forks = [p for p in processes if is_server(p) and is_server(by_pid.get(p["ppid"]))]
    print(f"{sum(p['cpu_s'] for p in forks):8.1f} s  {len(forks):5d} processes  forks")
    started, count = Counter(), Counter()
    for p in processes:
        parent = by_pid.get(p["ppid"])
        if is_server(p) and not is_server(parent):
            what = "servers with the compiler" if "--compiler" in p["cmd"] else "plain servers"
            by = kind(parent["cmd"], parent["comm"]) if parent else "?"
            started[what, by] += p["cpu_s"]
            count[what, by] += 1
    for (what, by), cpu in started.most_common():
        print(f"{cpu:8.1f} s  {count[what, by]:5d} processes  {what}, started by {by}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="every process seen, with its CPU seconds")
    ap.add_argument("--servers", type=Path, help="a --json record: its warm servers")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command to run")
    args = ap.parse_args(argv)
    if args.servers:
        servers(json.loads(args.servers.read_text()))
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("give the command to run after --")
    before: dict = {}
    sample(before, os.getpid())  # what ran already is not the command's
    seen: dict = {}
    started = time.monotonic()
    proc = subprocess.Popen(command)
    while proc.poll() is None:
        sample(seen, os.getpid())
        time.sleep(0.5)
    wall = time.monotonic() - started
    by_kind, count = Counter(), Counter()
    for key, p in seen.items():
        p["cpu_s"] = cpu = p["cpu_s"] - before.get(key, {}).get("cpu_s", 0.0)  # the command's
        by_kind[kind(p["cmd"], p["comm"])] += cpu
        count[kind(p["cmd"], p["comm"])] += 1
    for name, cpu in by_kind.most_common(12):
        print(f"{cpu:8.1f} s  {count[name]:5d} processes  {name}")
    print(f"{sum(by_kind.values()):8.1f} s  CPU in all; {wall:.0f} s wall; exit {proc.returncode}")
    if args.json:
        args.json.write_text(json.dumps(list(seen.values()), indent=1))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
