"""A warm start for checks: a process that has imported torch and the harness, forking judges.

A fresh Python importing torch takes seconds (docs/studies/h200_figures.md), and every check used to
start two (the judge, then the candidate's process). The server imports them once, never
touching a device, and forks one judge per request; the judge in turn forks the candidate's
process before it initialises a device itself (`scripts.judge`). Each fork starts in its own
session with exactly the environment asked for, as `python -m MODULE` would.

A server for checks (`compiler=True`) also imports Dynamo and Inductor, so that a torch.compile
candidate's process does not (seconds of every compiled check): `_import_compiler`.

One server per judge environment (so the device it may see is fixed when it starts) and
compiler setting, owned by the orchestrator process that started it: requests come only over its stdin, which no judge or
candidate inherits, and it exits when that pipe closes. Protocol: one JSON line per request,
`{"id", "module", "argv", "env", "cwd", "log"}`; answers `{"id", "pid"}` once
forked (or `{"id", "error"}`) and `{"id", "status"}` when the fork exits (negative: a signal).
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path

from kernel_bakeoff.scripts import sandbox

MAX_SERVERS = 8  # judge environments kept warm (one per GPU of an 8-GPU host); oldest go first
START_TIMEOUT_S = 120.0  # importing torch (and the compiler) on a cold disk
COMPILER_VAR = "BAKEOFF_PRELOAD_COMPILER"  # "0": no server imports the compiler
COMPILER_MODULES = ("torch._dynamo", "torch._inductor.compile_fx")


def preload(compiler: bool = False) -> bool:
    """What every judge and candidate imports, short of touching a device (which would make the
    forks' device contexts unusable); with `compiler`, Dynamo and Inductor too where that can
    be done without touching it. True if the compiler was imported."""
    import torch  # noqa: F401

    import kernel_bakeoff.scripts.child  # noqa: F401
    import kernel_bakeoff.scripts.judge  # noqa: F401
    import kernel_bakeoff.scripts.reference  # noqa: F401
    import kernel_bakeoff.scripts.verify  # noqa: F401

    try:
        import triton.language  # noqa: F401
    except ImportError:
        pass
    return compiler and os.environ.get(COMPILER_VAR, "1") != "0" and _import_compiler()


def _import_compiler() -> bool:
    """Import Dynamo and Inductor without initialising the device driver; False (nothing
    imported) where that cannot be done.

    Their import asks `torch.cuda.is_available()` once (Inductor's benchmarking module, torch
    2.11: the only device call the fork-import study found: docs/studies/README.md), and the CUDA
    runtime's answer initialises the driver, after which every fork failed "Cannot
    re-initialize CUDA in forked subprocess". For the import alone, that question is answered
    from NVML, which leaves the driver alone, and NVML is shut down again after; the study
    measured a fork of such a server reaching its first compiled result several times sooner.
    Unlike PYTORCH_NVML_BASED_CUDA_CHECK=1 in the server's environment (which reached the forks:
    every check failed "Invalid device id"), nothing changes for the judges and candidates
    forked after: the same environment, the same CUDA calls (figures and the commit it was
    tried at: docs/studies/h200_figures.md). Not on ROCm (its SMI library's
    state after a fork is untested here): candidates import the compiler there themselves."""
    import torch

    cuda = torch.cuda
    answer = False
    if cuda._is_compiled():  # a CPU build answers False without touching anything
        if torch.version.hip:
            return False
        answer = _nvml_sees_a_device()
        if answer is None:
            return False
    real = cuda.is_available
    cuda.is_available = lambda: answer
    try:
        for name in COMPILER_MODULES:
            importlib.import_module(name)
    except Exception:
        return False  # the candidate's own import meets the same problem and reports it
    finally:
        cuda.is_available = real
    return True


def _nvml_sees_a_device() -> bool | None:
    """Whether NVML sees a device this process's CUDA_VISIBLE_DEVICES allows (None: NVML
    cannot say), with NVML shut down again: torch's count initialises it and leaves it so."""
    import ctypes

    import torch

    count_nvml = getattr(torch.cuda, "_device_count_nvml", None)
    if count_nvml is None:
        return None
    count = count_nvml()
    try:
        ctypes.CDLL("libnvidia-ml.so.1").nvmlShutdown()
    except OSError:
        pass
    return None if count < 0 else count > 0


def forks_can_use_device() -> bool:
    """Whether a process forked from this one may still initialise the device: false once this
    process (or an import it made) initialised the CUDA or HIP driver. Asked of a probe fork,
    because torch marks only the forks of such a process."""
    import torch

    if not torch.cuda._is_compiled():
        return True
    pid = os.fork()
    if pid == 0:
        os._exit(3 if torch.cuda._is_in_bad_fork() else 0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


_state = {"device_ok": True}


def serve(stdin_fd: int = 0, stdout_fd: int = 1, compiler: bool = False) -> int:
    sandbox.protect_self()
    imported = preload(compiler)
    _state["device_ok"] = forks_can_use_device()
    if imported and not _state["device_ok"]:  # the compiler's import touched the device after
        os.execv(
            sys.executable, [sys.executable, "-m", "kernel_bakeoff.scripts.forkserver"]
        )  # all: without it
    answer = os.fdopen(stdout_fd, "w", buffering=1)
    running: dict[int, int] = {}  # pid -> request id
    pending = b""
    open_ = True
    while open_ or running:
        ready, _, _ = select.select([stdin_fd] if open_ else [], [], [], 0.02)
        if ready:
            data = os.read(stdin_fd, 1 << 16)
            open_ = bool(data)
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in filter(None, lines):
                _start(json.loads(line), running, answer)
        for pid in list(running):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                rid = running.pop(pid)
                _say(answer, id=rid, status=os.waitstatus_to_exitcode(status))
    return 0


def _start(request: dict, running: dict[int, int], answer) -> None:
    try:
        if not _state["device_ok"]:
            raise OSError("an import initialised the device here, so its forks could not use it")
        pid = sandbox.fork_module(
            request["module"],
            request["argv"],
            env=request["env"],
            cwd=Path(request["cwd"]),
            log_path=Path(request["log"]),
            box=request.get("box"),
        )
    except (OSError, KeyError, ImportError) as exc:
        _say(answer, id=request.get("id"), error=f"{type(exc).__name__}: {exc}")
        return
    running[pid] = request["id"]
    _say(answer, id=request["id"], pid=pid)


def _say(answer, **fields) -> None:
    answer.write(json.dumps(fields) + "\n")


class Server:
    """The orchestrator's handle on one server: `run` is `sandbox.run` for a module's main.
    `compiler`: the server imports Dynamo and Inductor too (one that forks checks)."""

    def __init__(self, env: dict[str, str], compiler: bool = False):
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-P",
                "-m",
                "kernel_bakeoff.scripts.forkserver",
                *(["--compiler"] if compiler else []),
            ],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._answers: dict[int, dict] = {}
        self._next = 0
        self.alive = True  # its answers can still arrive
        self.closed = False  # it takes no more requests
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            message = json.loads(line)
            with self._changed:
                self._answers.setdefault(message["id"], {}).update(message)
                self._changed.notify_all()
        with self._changed:
            self.alive = False
            self._changed.notify_all()

    def _await(self, rid: int, key: str, deadline: float) -> dict | None:
        """The answers to request `rid` once `key` (or an error) is among them; None if the
        server went away or the deadline passed first."""
        with self._changed:
            while not {key, "error"} & self._answers.get(rid, {}).keys():
                left = deadline - time.monotonic()
                if not self.alive or left <= 0:
                    return None
                self._changed.wait(min(left, 0.05))
            return self._answers[rid]

    def run(
        self,
        module: str,
        argv: list[str],
        *,
        env,
        cwd: Path,
        log_path: Path,
        timeout_s: float,
        box: dict | None = None,
    ) -> sandbox.Finished | None:
        """Run module.main(argv) in a fork under a deadline; None if the server is unusable
        (then nothing was started and the caller starts the module itself)."""
        with self._lock:
            if self.closed:
                return None
            rid, self._next = self._next, self._next + 1
            request = dict(id=rid, module=module, argv=argv, env=env, cwd=str(cwd))
            request.update(log=str(log_path), box=box)
            try:
                self.proc.stdin.write((json.dumps(request) + "\n").encode())
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                self.closed = True
                return None
        deadline = time.monotonic() + START_TIMEOUT_S
        started = self._await(rid, "pid", deadline)
        if started is None or "pid" not in started:
            self.close()  # a server that cannot fork is of no use to later checks either
            return None
        pid = started["pid"]
        ended = self._await(rid, "status", time.monotonic() + timeout_s)
        if ended is None:
            timed_out = self.alive  # else the server died: what it forked is killed, not late
            _kill_group(pid)
            ended = self._await(rid, "status", time.monotonic() + 10.0) or {}
            status = ended.get("status", -signal.SIGKILL)
            return sandbox.Finished(returncode=status, timed_out=timed_out)
        _kill_group(pid)  # anything the module left running in its session
        with self._lock:
            self._answers.pop(rid, None)
        return sandbox.Finished(returncode=ended["status"], timed_out=False)

    def close(self) -> None:
        """Take no more requests. The server exits once the judges it forked have (each runs
        under its own deadline), so checks in flight still get their answers."""
        with self._lock:
            self.closed = True
            try:
                self.proc.stdin.close()
            except OSError:
                pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_servers: OrderedDict[tuple, Server] = OrderedDict()
_servers_lock = threading.Lock()


def enabled() -> bool:
    return os.environ.get("BAKEOFF_WARM_START", "1") != "0" and hasattr(os, "fork")


def server_for(env: dict[str, str], compiler: bool = False) -> Server | None:
    """The warm server for this judge environment (started on first use), one that imported
    the compiler too if `compiler`, or None if warm starts are off (BAKEOFF_WARM_START=0).
    A server with the compiler serves requests without it as well: a process that warmed one
    up (scripts.check.warm_up) starts no second server for its freezes and untrusted steps."""
    if not enabled():
        return None
    key = (tuple(sorted(env.items())), compiler)
    with _servers_lock:
        for k in [key] if compiler else [(key[0], True), key]:
            server = _servers.get(k)
            if server is not None and server.alive and not server.closed:
                _servers.move_to_end(k)
                return server
        server = _servers[key] = Server(dict(env), compiler)
        _servers.move_to_end(key)
        while len(_servers) > MAX_SERVERS:
            _servers.popitem(last=False)[1].close()
        return server


def run_module(
    module: str,
    argv: list[str],
    *,
    compiler: bool = False,
    warm: bool = True,
    server_env: dict[str, str] | None = None,
    **launch,
) -> sandbox.Finished:
    """`module.main(argv)` with `launch` (env, cwd, log_path, timeout_s, box): forked by the warm
    server for `server_env` (launch's env if None; one with the compiler if `compiler`), else,
    with warm starts off (or `warm` False) or a server that cannot fork, as `python -m module`
    in a fresh interpreter. The same box, environment and deadline either way."""
    server = (
        server_for(launch["env"] if server_env is None else server_env, compiler) if warm else None
    )
    finished = server.run(module, argv, **launch) if server else None
    if finished is None:
        # -P: nothing from the working directory is imported (a judge's is the check's work
        # directory): only the harness (PYTHONPATH) and the interpreter's own paths.
        finished = sandbox.run([sys.executable, "-P", "-m", module, *argv], **launch)
    return finished


def server_pids() -> set[int]:
    with _servers_lock:
        return {s.proc.pid for s in _servers.values()}


@atexit.register
def close_all() -> None:
    with _servers_lock:
        while _servers:
            _servers.popitem()[1].close()


if __name__ == "__main__":
    sys.exit(serve(compiler="--compiler" in sys.argv[1:]))
