"""Untrusted code (the candidate and the frozen baseline, which the judge imports) in its own
user, PID and mount namespaces, with its own /proc.

Why: a process of the same user can read `/proc/PID/environ` of every dumpable process of
that user (the worker, the flow-run engine, the user's shell), and with it `ANTHROPIC_API_KEY`
and Prefect's API settings; scrubbing the candidate's own environment does not stop that. In
a PID namespace of its own, with a procfs mounted for that namespace, the only processes it can
name or see are the judge's tree. The namespaces need no privilege (unprivileged user
namespaces; as root they always work), no helper binary, and no device change: `/dev`, `/sys`
and the file system stay as they are, so a GPU (`/dev/nvidia*`, `/dev/kfd`, `/dev/dri`) and
the CUDA or ROCm libraries stay usable. After the mounts every capability is dropped, so the
new /proc cannot be unmounted to uncover the host's. A few well-known credential files of the
user's home are hidden under empty mounts too (defence in depth, not the boundary).

How: `enter()` in a freshly forked, single-threaded process (sandbox.fork_module, before the
module runs) unshares the namespaces and forks once more; the outer process only relays: it
waits and exits as the inner one did, so its parent's pid, process group and exit status mean
what they meant. The process two forks down runs the code; the one between is PID 1 of the namespace
(init, which ignores the signals a process sends itself, so the code must not be it): when the
code ends, init reports how and exits, and the kernel kills everything left inside. A fresh interpreter is started through `python -m scripts.isolation
ARGV...` (`wrap`), which does the same and then execs ARGV.

Where the kernel refuses (user namespaces disabled, a seccomp filter), the code runs as before
and a loud warning says that candidates can read this user's processes. `BAKEOFF_ISOLATION=none`
turns isolation off on purpose (with the same warning).
"""

from __future__ import annotations

import ctypes
import os
import pwd
import signal
import sys
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_RDONLY = 2, 4, 8, 1
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
_PR_SET_PDEATHSIG = 1
_PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 3, 4
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_CAP_VERSION_3 = 0x20080522
# Credential stores of the user's home hidden from untrusted code (defence in depth).
HIDDEN = (
    ".prefect",
    ".anthropic",
    ".claude",
    ".claude.json",
    ".config/anthropic",
    ".config/gh",
    ".aws",
    ".ssh",
    ".netrc",
    ".git-credentials",
    ".docker",
)
WARNING = (
    "WARNING: candidate code is NOT isolated ({why}): it can read the environment of every "
    "process of this user (/proc/PID/environ), API keys included. Run the worker where user "
    "namespaces are allowed (sysctl kernel.unprivileged_userns_clone=1, "
    "user.max_user_namespaces>0) or as root."
)

_inside = False
_probed: str | None | bool = False  # False: not probed yet


def wanted(env=None) -> bool:
    value = (os.environ if env is None else env).get("BAKEOFF_ISOLATION", "namespace")
    return value.lower() not in ("none", "off", "0")


def inside() -> bool:
    """Whether this process runs in namespaces made by `enter`: it (or the process it was forked
    from) entered them, or it was exec'd by `main` (its parent is the namespace's init, which
    runs this file). Processes started inside stay inside; pids seen here mean nothing outside."""
    if _inside:
        return True
    try:
        return os.getppid() == 1 and Path(__file__).name.encode() in _cmdline(1)
    except OSError:
        return False


def _cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


class HalfMade(Exception):
    """The namespaces were made but this user could not be mapped into them: nothing can be
    undone, and such a process cannot even start a thread."""


def _unshare() -> None:
    """New namespaces with this user mapped to itself. OSError: nothing changed."""
    uid, gid = os.geteuid(), os.getegid()
    libc = _libc()
    # A non-dumpable process's /proc/self files belong to root, so an ordinary user could not
    # write its own id maps (the fork server's judges are non-dumpable: sandbox.protect_self).
    # Dumpable for these few calls, as a freshly exec'd process is anyway; then as it was.
    dumpable = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS), "unshare")
        try:
            try:
                _write("/proc/self/setgroups", "deny")
            except FileNotFoundError:
                pass
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
        except OSError as exc:
            raise HalfMade(f"mapping user {uid} into the new namespaces: {exc}") from exc
    finally:
        libc.prctl(_PR_SET_DUMPABLE, 1 if dumpable == 1 else 0, 0, 0, 0)  # 2 cannot be set


def _mount(source, target, fstype, flags, data=None) -> None:
    libc = _libc()
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
    enc = [None if s is None else os.fsencode(s) for s in (source, target, fstype, data)]
    _check(libc.mount(enc[0], enc[1], enc[2], flags, enc[3]), f"mount {target}")


def _hide_credentials() -> None:
    try:
        home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        return
    for name in HIDDEN:
        path = home / name
        try:
            if path.is_dir():
                _mount("tmpfs", str(path), "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k")
            elif path.exists():
                _mount("/dev/null", str(path), None, MS_BIND)
        except OSError:
            pass  # a path on a file system that refuses: the /proc boundary still holds


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]


def _drop_capabilities() -> None:
    libc = _libc()
    for cap in range(64):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = _CapHeader(_CAP_VERSION_3, 0)
    _check(libc.capset(ctypes.byref(header), (_CapData * 2)()), "capset")
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def _wait(pid: int) -> int:
    """Wait for `pid` (its exit code, negative for a signal); SIGTERM and the like kill it."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda _s, _f: os.kill(pid, signal.SIGKILL))
    while True:
        try:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue


def _end_as(code: int) -> None:
    if code < 0:
        if -code not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 128 - code)


def _outer(pid: int, report: int) -> None:
    """Outside the namespaces: wait for its init and end exactly as the code inside ended (a
    signal too, which init itself could not re-raise: it tells us over `report`)."""
    os.closerange(3, report)
    os.closerange(report + 1, 65536)
    code = _wait(pid)
    told = os.read(report, 32).decode().strip()
    _end_as(int(told) if told.lstrip("-").isdigit() else code)


def _init(pid: int, report: int) -> None:
    """PID 1 of the namespace: wait for the code, say how it ended; the kernel then kills
    whatever the code left behind in the namespace."""
    os.closerange(3, report)
    os.closerange(report + 1, 65536)
    code = _wait(pid)
    os.write(report, str(code).encode())
    os._exit(0)


def enter() -> str | None:
    """Move this (freshly forked, single-threaded) process into new namespaces.

    Returns None once isolated (in a process two forks down; the two above only relay, and
    never return), or why it could not be (nothing changed then). A process the namespaces
    were made for but that could not be mapped into them exits with status 70 and one line."""
    global _inside
    if inside():
        return None
    if not wanted():
        return "BAKEOFF_ISOLATION=none"
    leader = os.getsid(0) == os.getpid()
    try:
        _unshare()
    except HalfMade as exc:  # never run untrusted code, or anything, like this
        print(f"isolation failed after unshare: {exc}", file=sys.stderr, flush=True)
        os._exit(70)
    except OSError as exc:
        return str(exc)
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        _outer(pid, read)
    os.close(read)
    try:
        _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        _hide_credentials()
        _drop_capabilities()
    except OSError as exc:  # half-made: never run untrusted code like this
        print(f"isolation failed after unshare: {exc}", file=sys.stderr, flush=True)
        os._exit(70)
    pid = os.fork()  # the code must not be PID 1, which ignores the signals it sends itself
    if pid:
        _init(pid, write)
    os.close(write)
    if leader:  # as its caller made it; its group is killed with the namespace anyway
        os.setsid()
    _inside = True
    return None


def probe() -> str | None:
    """Whether `enter` works here (None) or why not; tried once per process in a fork."""
    global _probed
    if _probed is not False:
        return _probed
    if not wanted():
        _probed = "BAKEOFF_ISOLATION=none"
        return _probed
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        why = enter()
        if why is None:  # inside: only the namespace's init and this process are visible
            why = "" if len(_pids()) <= 2 else "procfs not private"
        os.write(write, why.encode()[:500])
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        answer = f.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if not answer and code != 0:
        answer = f"isolation failed after unshare (exit status {code})"
    _probed = answer or None
    return _probed


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def warning() -> str | None:
    """The loud line for operators where candidates are not isolated, else None."""
    why = probe()
    return WARNING.format(why=why) if why else None


def wrap(argv: list[str], env) -> list[str]:
    """The command line that runs `argv` under environment `env` isolated (this file run as a
    script by an interpreter that imports nothing else: a few tens of milliseconds)."""
    if inside() or not wanted(env):
        return argv
    return [sys.executable, "-I", "-S", str(Path(__file__).resolve()), *argv]


def main(argv: list[str]) -> int:
    why = enter()
    if why:
        print(WARNING.format(why=why), file=sys.stderr, flush=True)
    os.execvp(argv[0], argv)
    return 127  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
