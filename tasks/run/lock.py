"""One bake-off at a time in a run directory.

Two bake-offs writing one run directory (the same `bakeoff run` in two terminals, or a CLI run
beside a deployment's) race on its task, its kept verdicts and every check's files: on a CPU,
where both get a slot, each check then read the other's half-written outputs and was flagged.
So a bake-off holds an exclusive lock on `RUN_DIR/.lock` for as long as it runs, and a second one
stops before writing anything, saying who holds it. The lock is the kernel's (flock): it goes
with its holder's process, so a killed run leaves nothing to clean up and the same command
resumes. Taken once: `bakeoff run` takes it before its freeze and hands the flow it runs in a
thread the opened run (flows/opening.py), which checks that this process holds it
(`held_here`) rather than taking it again; a second take in one process is a bug, and raises.
"""

from __future__ import annotations

import fcntl
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput

LOCK_FILE = ".lock"

_held: set[Path] = set()  # run directories this process holds the lock of
_guard = threading.Lock()


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold `run_dir`'s lock, or raise BadInput naming the process that holds it."""
    run_dir = Path(run_dir).resolve()
    with _guard:
        if run_dir in _held:
            raise RuntimeError(f"{run_dir}: this process holds its lock already (one opening)")
        made = _outermost_missing(run_dir)
        fd = _take(run_dir)
        _held.add(run_dir)
    try:
        yield
    finally:
        with _guard:
            _held.discard(run_dir)
            if made is not None:  # refused before it wrote anything: leave no trace
                _remove_if_bare(run_dir, made)
            os.close(fd)  # releases it


def held_here(run_dir: Path) -> bool:
    """Whether this process holds `run_dir`'s lock."""
    with _guard:
        return Path(run_dir).resolve() in _held


def _outermost_missing(path: Path) -> Path | None:
    missing = None
    while not path.exists():
        missing, path = path, path.parent
    return missing


def _remove_if_bare(run_dir: Path, made: Path) -> None:
    """Remove the directories this lock made, from `run_dir` up to `made`, if nothing but the
    lock was written there."""
    try:
        if {p.name for p in run_dir.iterdir()} != {LOCK_FILE}:
            return
        (run_dir / LOCK_FILE).unlink()
        for path in [run_dir, *run_dir.parents]:
            path.rmdir()
            if path == made:
                return
    except OSError:
        return


def _take(run_dir: Path) -> int:
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise BadInput(
            str(run_dir),
            f"another bake-off is running in this run directory ({holder}); "
            "wait for it to end, or give this one its own --run-dir",
        ) from None
    os.ftruncate(fd, 0)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {stamp}\n".encode(), 0)
    return fd
