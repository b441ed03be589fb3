"""A flow run started by a worker outlives the worker's death.

Prefect 3.9's process worker reads a flow run's stdout and stderr through pipes and copies
them to its own console. When the worker dies alone (SIGKILL, the OOM killer), those pipes
lose their reader: the run's next write fails with BrokenPipeError, in Prefect's console log
handler, in a lane's thread, anywhere, and a child process writing there dies of SIGPIPE.
The run itself (its heartbeat, its API logs, its results) does not need the worker.

`outlive_worker()` puts a relay between the two: fds 1 and 2 become pipes this process
drains itself, copying to the worker while it reads and dropping the output once it is gone
(every line also reaches the server through Prefect's API log handler).
"""

from __future__ import annotations

import atexit
import os
import stat
import sys
import threading

_relays: list[tuple[int, int, threading.Thread]] = []  # (fd, upstream, thread)
_lock = threading.Lock()


def outlive_worker() -> bool:
    """In a worker's flow run whose output is a pipe, relay fds 1 and 2; else nothing.

    Idempotent (a lane subflow calls it again inside its bake-off). Returns whether the relay
    is in place."""
    with _lock:
        if _relays:
            return True
        if not os.environ.get("PREFECT__FLOW_RUN_ID"):
            return False  # not started by a worker (`bakeoff run`, tests, a plain call)
        for fd in (1, 2):
            try:
                if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                    continue
            except OSError:
                continue
            for stream in (sys.stdout, sys.stderr):
                _flush(stream)
            upstream = os.dup(fd)
            read_end, write_end = os.pipe()
            os.dup2(write_end, fd)
            os.close(write_end)
            thread = threading.Thread(
                target=_relay, args=(read_end, upstream), name=f"relay-fd{fd}", daemon=True
            )
            thread.start()
            _relays.append((fd, upstream, thread))
        if _relays:
            atexit.register(_drain_at_exit)
        return bool(_relays)


def _relay(read_end: int, upstream: int | None) -> None:
    while chunk := os.read(read_end, 65536):
        while upstream is not None and chunk:
            try:
                chunk = chunk[os.write(upstream, chunk) :]
            except OSError:  # the worker is gone: keep draining, drop what comes
                os.close(upstream)
                upstream = None
    os.close(read_end)


def _drain_at_exit() -> None:
    """What was written last reaches the worker (if it still reads) before the process ends:
    each fd goes back to /dev/null, so the relay sees the end of its pipe and finishes."""
    for stream in (sys.stdout, sys.stderr):
        _flush(stream)
    null = os.open(os.devnull, os.O_WRONLY)
    for fd, _upstream, _thread in _relays:
        os.dup2(null, fd)
    os.close(null)
    for _fd, _upstream, thread in _relays:
        thread.join(2)  # a child still holding the pipe keeps it open: do not wait on it


def _flush(stream) -> None:
    try:
        stream.flush()
    except (OSError, ValueError):
        pass
