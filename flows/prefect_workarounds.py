"""Every place the flows work around a behaviour of Prefect, in one module.

Measured on Prefect 3.9.1 (the version installed and named in prefect.yaml; pyproject allows
`prefect>=3.4,<4`). Each workaround's docstring names the behaviour it works around; when
Prefect changes, these are the places to look at again, and the only ones. Prefect itself is
imported inside the functions: `bakeoff run` imports this module before it has checked the
request, and bad input must cost no Prefect import (flows/live.py).

    outlive_worker()               a worker's death must not kill the run it started
    LaneStarts                     lane subflows created one at a time (embedded SQLite's 503s)
    subflows_without_heartbeats()  no 1 s heartbeat-thread join per subflow
    start_beside_freeze()          the temporary server's 20-25 s start, beside the freeze
"""

from __future__ import annotations

import atexit
import os
import stat
import sys
import threading
from collections.abc import Callable
from contextlib import contextmanager

_relays: list[tuple[int, int, threading.Thread]] = []  # (fd, upstream, thread)
_lock = threading.Lock()


def outlive_worker() -> bool:
    """A flow run started by a worker outlives the worker's death.

    Prefect 3.9.1's process worker reads a flow run's stdout and stderr through pipes and
    copies them to its own console. When the worker dies alone (SIGKILL, the OOM killer),
    those pipes lose their reader: the run's next write fails with BrokenPipeError, in
    Prefect's console log handler, in a lane's thread, anywhere, and a child process writing
    there dies of SIGPIPE. The run itself (its heartbeat, its API logs, its results) does not
    need the worker.

    So, in a worker's flow run whose output is a pipe, fds 1 and 2 become pipes this process
    drains itself, copying to the worker while it reads and dropping the output once it is
    gone (every line also reaches the server through Prefect's API log handler); elsewhere
    nothing. Idempotent (a lane subflow calls it again inside its bake-off). Returns whether
    the relay is in place."""
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


class LaneStarts:
    """Starts the lane subflows of one bake-off one at a time, then lets them work together.

    Flow-run writes made while other lanes' tasks are being recorded are answered by Prefect
    3.9.1's embedded SQLite server with 503, which the client retries only after 2 s or more. So each
    lane's subflow is created alone (the gate), and no lane starts working (and writing) until
    every lane has been created (the barrier); then they all run at once.
    """

    _local = threading.local()

    def __init__(self, count: int, wait_s: float = 60.0):
        self.gate = threading.Semaphore(1)
        self.barrier = threading.Barrier(max(1, count))
        self.wait_s = wait_s

    @contextmanager
    def starting(self):
        """Around the subflow call, in the thread that makes it."""
        self.gate.acquire()
        self._local.current, self._local.gate_held = self, True
        try:
            yield
        finally:
            reached = not self._local.gate_held
            self._open_gate()
            self._local.current = None
            if not reached:  # the lane never got going: nobody should wait for it
                self.barrier.abort()

    def _open_gate(self) -> None:
        if getattr(self._local, "gate_held", False):
            self._local.gate_held = False
            self.gate.release()

    @classmethod
    def started(cls) -> None:
        """First act of a lane's body: let the next lane start, wait for the others."""
        current = getattr(cls._local, "current", None)
        if current is None:
            return  # run alone or as a deployment
        current._open_gate()
        try:
            current.barrier.wait(current.wait_s)
        except threading.BrokenBarrierError:
            pass


@contextmanager
def subflows_without_heartbeats():
    """Subflows and lanes started inside run without flow-run heartbeats.

    They run in this process, whose own flow run's heartbeat already tells the server it is
    alive, and Prefect 3.9.1 makes every sync flow run wait up to 1 s for its heartbeat thread
    when it ends: a second per subflow, per lane, for nothing.
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def wanted(devices_kind: str) -> bool:
    """Only on a GPU host, only where Prefect would start a temporary server itself."""
    if devices_kind == "cpu" or os.environ.get("PREFECT_API_URL"):
        return False
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    return not PREFECT_API_URL.value() and bool(PREFECT_SERVER_EPHEMERAL_ENABLED.value())


def start_beside_freeze(devices_kind: str) -> Callable[[], None]:
    """Start Prefect's temporary server while the CLI freezes the kernel, not after.

    `bakeoff run` without a Prefect server configured (no PREFECT_API_URL) has Prefect 3.9.1
    start a temporary one at the first flow call: 20-25 s before the bake-off's first step,
    after the freeze. On a GPU host the two can overlap: the server's start is host work, the
    freeze's timing is device time on a host with cores to spare. On a CPU-only host they
    would share the cores the frozen baseline is timed on, so there the server starts as
    before.

        join = start_beside_freeze(devices_kind)
        freeze(...)
        join()   # before any flow runs: Prefect's start() is not safe to call from two threads

    The server starts in a thread (Prefect imported there too); this returns the call that
    waits for it. A start that fails here is left to the first flow call, which starts the
    server itself and says why it could not."""
    if devices_kind == "cpu" or os.environ.get("PREFECT_API_URL"):
        return lambda: None

    def start() -> None:
        try:
            if wanted(devices_kind):
                from prefect.server.api.server import SubprocessASGIServer

                SubprocessASGIServer().start()  # the instance the first flow call will use
        except Exception:  # noqa: BLE001 - the flow's own start reports it
            return

    thread = threading.Thread(target=start, name="prefect-server-start", daemon=True)
    thread.start()
    return thread.join
