"""Running untrusted code: a scrubbed environment, its own session, a deadline, no survivors.

The judge makes itself a child subreaper (Linux), so every process the candidate starts, even
one that detaches with setsid and a double fork, stays its descendant and is killed (`sweep`)
before anything is judged. The candidate's process confines itself first thing (no core files,
no new privileges, no capabilities when root); the judge and the orchestrator make themselves
non-dumpable, so a candidate can neither trace them nor read their memory or environment. Exit
status and output prove nothing; only what `Child.wait` observes itself (the deadline, the
signal, the kernel's times for the marker lines) is trusted.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib
import io
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kernel_bakeoff.scripts import box, isolation

# Any variable whose name contains one of these is a credential; so is the orchestrator's config.
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
SECRET_PREFIXES = ("PREFECT_", "ANTHROPIC_", "OPENAI_", "AWS_")
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
MAX_MARKERS = 100_000


def is_secret(name: str) -> bool:
    upper = name.upper()
    return any(w in upper for w in SECRET_WORDS) or upper.startswith(SECRET_PREFIXES)


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of `env` untrusted code may see: the box's allow-list (scripts/box.py), never a
    credential, a database URL or a Prefect setting."""
    return box.allowed_env({k: v for k, v in env.items() if not is_secret(k)})


def judge_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a judge and of every untrusted step beside it (scripts/check.py,
    scripts/untrusted.py, scripts/sizes.py), so one warm server serves them all: this
    process's, scrubbed, with `extra` (a device's variables) and the harness importable."""
    env = scrub_env(os.environ)
    env.update(extra or {})
    root = str(Path(__file__).resolve().parent.parent)
    paths = [root, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(PYTHONPATH=os.pathsep.join(paths), PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
    return env


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values worth redacting from anything a candidate printed (short ones would hit by chance)."""
    return sorted(
        {v for k, v in env.items() if is_secret(k) and len(v) >= 8}, key=len, reverse=True
    )


def redact(text: str, values: list[str]) -> str:
    for value in values:
        text = text.replace(value, "[redacted]")
    return text


def _prctl(option: int, arg: int) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False  # not Linux


def become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process instead of init (Linux only)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def protect_self() -> bool:
    """Make this process non-dumpable: processes without CAP_SYS_PTRACE can then neither attach
    to it nor read its memory or /proc/PID/environ, even under the same user."""
    return _prctl(_PR_SET_DUMPABLE, 0)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def confine_self() -> None:
    """Called first thing in the candidate's process: no core files, no new privileges, and for
    root no capabilities (so it cannot trace or read protected processes of the same user)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    if os.geteuid() != 0:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    for cap in range(64):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.capset(ctypes.byref(_CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)), (_CapData * 2)())


def _parent_map() -> dict[int, int]:
    parents = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields resume after the last ')'.
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 1:
            parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int]:
    if not Path("/proc/self/stat").exists():
        return []
    children: dict[int, list[int]] = {}
    for pid, ppid in _parent_map().items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_descendants(rounds: int = 200) -> int:
    """SIGKILL every descendant of this process until none is left; return how many were killed.

    Call it only after the direct child has been waited for (its exit status is read first)."""
    killed: set[int] = set()
    for _ in range(rounds):
        pids = descendants(os.getpid())
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.005)
        _reap()
    _reap()
    return len(killed)


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "is still running"
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            what = signal.strsignal(sig) or sig.name
            return f"was killed by {sig.name} ({what.lower()})"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


@dataclass
class Finished:
    returncode: int | None
    timed_out: bool
    markers: list[tuple[str, int]] = field(default_factory=list)  # (line, ns when written)
    killed: int = 0
    replies: list[tuple[str, int]] = field(default_factory=list)  # (line answered, ns)

    @property
    def how(self) -> str:
        return describe_exit(self.returncode)


def new_file(path: Path, mode: str = "wb"):
    """Open a file this process creates itself: whatever stood at `path` (a link that a candidate
    planted, say) is removed first, and a link appearing meanwhile is not followed."""
    Path(path).unlink(missing_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    return os.fdopen(os.open(path, flags, 0o644), mode)


def write_new(path: Path, text: str) -> None:
    with new_file(path, "w") as f:
        f.write(text)


def spawn(
    argv: list[str], *, env: dict[str, str], cwd: Path, log_path: Path, pass_fds=(), plan=None
) -> subprocess.Popen:
    """Start `argv` in the box `plan` (box.plan(); None: only `cwd` writable)."""
    if plan is None and not isolation.inside():
        plan = box.plan(write=[cwd], cwd=str(cwd))
    with new_file(log_path) as log:
        return subprocess.Popen(
            isolation.wrap(argv, env, plan),  # in its box (scripts/box.py, scripts/isolation.py)
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Markers:
    """Marker lines from the child, each stamped by the kernel when it was sent.

    A datagram socket with SO_TIMESTAMPNS: the time is taken when the child writes, however
    late this process reads (it may be busy importing while the candidate runs). A thread keeps
    the queue drained so the child never blocks on a full one."""

    def __init__(self, answer: Callable[[str], bytes | None] | None = None):
        self._ours, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._stamped = _set_timestamps(self._ours)
        self._ours.setblocking(False)
        self.lines: list[tuple[str, int]] = []  # (line, CLOCK_REALTIME ns when it was sent)
        # `answer`: called with each line as it arrives; bytes it returns go back to the child
        # on a pipe only this process writes, stamped by this process's clock (`replies`).
        self._answer = answer
        self.replies: list[tuple[str, int]] = []  # (the line answered, CLOCK_REALTIME ns)
        self.answers_theirs: int | None = None
        if answer is not None:
            self.answers_theirs, self._answers_ours = os.pipe()
            os.set_blocking(self._answers_ours, False)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drain_until_stopped, daemon=True)

    @property
    def child_fds(self) -> tuple[int, ...]:
        fds = (self.theirs.fileno(),)
        return fds if self.answers_theirs is None else (*fds, self.answers_theirs)

    def start(self) -> None:
        self.theirs.close()  # the child holds its own copies now
        if self.answers_theirs is not None:
            os.close(self.answers_theirs)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                data, ancillary, _, _ = self._ours.recvmsg(65536, socket.CMSG_SPACE(16))
            except (BlockingIOError, InterruptedError):
                return
            sent = time.time_ns()
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and self._stamped:
                    sec, nsec = struct.unpack("qq", payload[:16])
                    sent = sec * 1_000_000_000 + nsec
            line = data.decode(errors="replace").strip()
            if line and len(self.lines) < MAX_MARKERS:  # a flood is not stored (nor believed)
                self.lines.append((line, sent))
                if self._answer is not None and (reply := self._answer(line)):
                    self.replies.append((line, time.time_ns()))
                    try:
                        os.write(self._answers_ours, reply)
                    except OSError:
                        pass  # the child is gone or never reads: it waits until its deadline

    def _drain_until_stopped(self) -> None:
        while not self._stop.is_set():
            select.select([self._ours], [], [], 0.05)
            self._drain()

    def stop(self) -> list[tuple[str, int]]:
        self._stop.set()
        self._thread.join()
        self._drain()
        self._ours.close()
        if self._answer is not None:
            os.close(self._answers_ours)
        return sorted(self.lines, key=lambda item: item[1])


def _set_timestamps(sock: socket.socket) -> bool:
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        return True
    except OSError:
        return False  # stamped on arrival here instead


class Child:
    """A process in its own session under a deadline; `wait` kills its process group.

    With `with_markers`, the child gets the file descriptor of a datagram socket as an extra
    argument; each line it writes there comes back with the time it was written (`Markers`).
    With `answer` too, a second one: the read end of a pipe on which `answer`'s replies come.
    With `sweep`, `wait` also kills every other descendant of this process: only for a
    subreaper whose sole child this is (the judge), never in a process that runs other work.
    With `fork`, argv must read `[python, "-m", module, *args]` and the module runs in a fork of
    this process (`fork_module`) instead of a new interpreter."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        log_path: Path,
        timeout_s: float,
        with_markers: bool = False,
        answer: Callable[[str], bytes | None] | None = None,
        sweep: bool = False,
        fork: bool = False,
        box: dict | None = None,
    ):
        self.timeout_s = timeout_s
        self.sweep = sweep
        self._markers = Markers(answer) if with_markers else None
        fds = self._markers.child_fds if with_markers else ()
        self._start = time.monotonic()
        if fork:  # argv is [python, "-m", module, *args]: run module.main(args) in a fork
            module, args = argv[2], [*argv[3:], *map(str, fds)]
            pid = fork_module(
                module, args, env=env, cwd=cwd, log_path=log_path, keep_fds=fds, box=box
            )
            self.proc = Forked(pid)
        else:
            argv = [*argv, *map(str, fds)]
            self.proc = spawn(argv, env=env, cwd=cwd, log_path=log_path, pass_fds=fds, plan=box)
        if self._markers:
            self._markers.start()

    def wait(self) -> Finished:
        timed_out = False
        while self.proc.poll() is None:
            remaining = self.timeout_s - (time.monotonic() - self._start)
            if remaining <= 0:
                timed_out = True
                break
            try:
                self.proc.wait(timeout=min(remaining, 0.05))
            except subprocess.TimeoutExpired:
                pass
        kill_group(self.proc)
        self.proc.wait()
        killed = kill_descendants() if self.sweep else 0
        return Finished(
            returncode=self.proc.returncode,
            timed_out=timed_out,
            markers=self._markers.stop() if self._markers else [],
            killed=killed,
            replies=self._markers.replies if self._markers else [],
        )


def run(argv: list[str], **kwargs) -> Finished:
    """Run `argv` as a `Child` (same keyword arguments) and wait for it."""
    return Child(argv, **kwargs).wait()


def fork_module(
    module: str,
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    log_path: Path,
    keep_fds=(),
    box: dict | None = None,
) -> int:
    """Fork a process that runs `module.main(argv)` as `spawn` would run `python -m module`: its
    own session, `cwd`, exactly `env`, output to `log_path`, no other inherited descriptors.

    It skips the interpreter's start and the imports this process already made (torch takes
    seconds). Only for a single-threaded caller that has not initialised a GPU. `box`: the
    plan of its box (scripts/box.py); None: only `cwd` writable."""
    if box is None and not isolation.inside():
        # the module, loaded at the top already: the parameter `box` hides its name here
        from kernel_bakeoff.scripts import box as policy

        box = policy.plan(write=[cwd], cwd=str(cwd))
    with new_file(log_path) as log:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid:
            return pid
        code = 1
        try:
            _leave_inherited_finalizers()
            os.setsid()
            os.chdir(cwd)
            _redirect(log.fileno(), keep_fds)
            os.environ.clear()
            os.environ.update(env)
            why = isolation.enter(box)  # in its box from here on (scripts/isolation.py)
            if why == "BAKEOFF_ISOLATION=none":
                print(isolation.WARNING, flush=True)
            elif why:  # untrusted code never runs unboxed unless that was asked for
                print(isolation.REFUSED.format(why=why), flush=True)
                # a box in a box that cannot be made is the harness's failure: the status
                # only a relay gives (box.EXIT_BROKEN), never one the code inside can
                os._exit(isolation.EXIT_BROKEN if (box or {}).get("nested") else 2)
            tempfile.tempdir = None  # chosen afresh from TMPDIR
            sys.argv = [module, *argv]
            target = importlib.import_module(module)
            sys.modules["__main__"] = target  # as `python -m module` has it
            code = target.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            atexit._run_exitfuncs()  # an interpreter's exit runs them; os._exit would not
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code or 0)


def _leave_inherited_finalizers() -> None:
    """In a fork: the finalizers this process inherited are its parent's to run at its own exit,
    not the fork's. Run in the fork, they removed the parent's temporary directories, and
    unregistering torch.library's registrations (made by a server's imports of Dynamo and
    Inductor) one by one was a tenth of every judge's and candidate's time (docs/testing.md).
    Finalizers made after the fork still run at its exit."""
    for info in list(getattr(weakref.finalize, "_registry", {}).values()):
        info.atexit = False


def _redirect(log_fd: int, keep_fds) -> None:
    """stdin from /dev/null, stdout and stderr to `log_fd` (unbuffered), other fds closed."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    keep = {0, 1, 2, *keep_fds}
    for name in os.listdir("/proc/self/fd") if Path("/proc/self/fd").is_dir() else []:
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)


class Forked:
    """The part of `subprocess.Popen` that `Child` uses, for a process made by `fork_module`."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.005)
        return self.returncode
