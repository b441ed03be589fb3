"""Where a command's CPU goes, from the kernel's process accounting: every exited process's CPU,
pid, parent and fork flag, joined with command lines sampled from /proc. Unlike
`benchmarks/suite_cpu.py` (which samples /proc alone), it also counts processes that live less
than a sampling interval. The table in docs/testing.md ("Where the suite's CPU went") came
from it.

    python3 benchmarks/suite_acct.py record OUT -- COMMAND...    (root, Debian's `acct`)
    python3 benchmarks/suite_acct.py report OUT [--only PATH]

`--only PATH`: count only processes whose command line, or an ancestor's, holds PATH (e.g. the
clone a CI run used), leaving out whatever else ran on the machine meanwhile. A fork that
never execs keeps its parent's command line, so the checks forked from a warm server count
as its forks. A process still running when the command ends is not counted.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

KINDS = (  # first match wins: (kind, a fragment of the command line)
    ("pytest workers", "exec(eval(sys.stdin"),
    ("Prefect servers", "prefect.server"),
    ("Prefect servers", "server start"),
    ("Prefect flow runs", "prefect.runner._workspace_supervisor"),
    ("Prefect workers", "worker start"),
    ("candidates in a fresh interpreter", "kernel_bakeoff.scripts.child"),
    ("pip", "-m pip"),
)


def _sample(path: Path, stop: threading.Event) -> None:
    seen: set[tuple[str, str]] = set()
    with path.open("a") as out:
        while not stop.is_set():
            for pid in filter(str.isdigit, (p.name for p in Path("/proc").iterdir())):
                try:
                    start = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
                    if (pid, start) not in seen:
                        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
                        seen.add((pid, start))
                        cmd = raw.replace(b"\0", b" ").decode(errors="replace").strip()
                        out.write(f"{pid}\t{cmd[:300]}\n")
                except (OSError, IndexError):
                    continue  # it ended while being read
            out.flush()
            time.sleep(0.3)


def record(out: Path, command: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    (out / "pacct").touch()
    subprocess.run(["accton", str(out / "pacct")], check=True)
    stop = threading.Event()
    sampler = threading.Thread(target=_sample, args=(out / "cmdlines.tsv", stop), daemon=True)
    sampler.start()
    try:
        return subprocess.call(command)
    finally:
        subprocess.run(["accton", "off"], check=False)
        stop.set()
        sampler.join()


def kind(comm: str, cmd: str, forked: bool) -> str:
    if not cmd or "python" not in cmd.split(" ")[0]:
        return comm  # cc1plus, ld, postgres, node...
    if "kernel_bakeoff.scripts.forkserver" in cmd:
        if forked:
            return "checks forked from warm servers"
        return "warm servers with the compiler" if "--compiler" in cmd else "warm servers, plain"
    return next((k for k, part in KINDS if part in cmd), "other Python")


def report(out: Path, only: str | None = None) -> None:
    cmds: dict[str, str] = {}
    for line in (out / "cmdlines.tsv").read_text(errors="replace").splitlines():
        pid, _, cmd = line.partition("\t")
        cmds[pid] = cmd  # a reused pid: its latest command line
    dump = subprocess.run(["dump-acct", str(out / "pacct")], capture_output=True, text=True)
    rows = [f for f in (ln.split("|") for ln in dump.stdout.splitlines()) if len(f) >= 12]
    rows = [[x.strip() for x in f] for f in rows]
    parent = {f[9]: f[10] for f in rows}

    def kept(pid: str | None) -> bool:
        for _ in range(40):  # up the parents, as far as accounting or the sampler saw them
            if pid is None or pid in ("0", "1"):
                return False
            if only in cmds.get(pid, ""):
                return True
            pid = parent.get(pid)
        return False

    cpu, count = Counter(), Counter()
    for f in rows:
        if only and not kept(f[9]):
            continue
        k = kind(f[0], cmds.get(f[9], ""), "F" in f[11])
        cpu[k] += (float(f[2]) + float(f[3])) / 100  # clock ticks of 1/100 s
        count[k] += 1
    total = sum(cpu.values())
    print(f"{total:8.1f} CPU-s in {sum(count.values())} processes")
    for k, seconds in cpu.most_common(15):
        print(f"{seconds:8.1f} s  {count[k]:5d} processes  {k}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["report"] and len(argv) in (2, 4) and argv[2:3] in ([], ["--only"]):
        report(Path(argv[1]), argv[3] if len(argv) == 4 else None)
        return 0
    if argv[:1] == ["record"] and len(argv) >= 4 and argv[2] == "--":
        return record(Path(argv[1]), argv[3:])
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
