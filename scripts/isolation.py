"""Makes the box that `scripts/box.py` describes, in a fork (`enter`) or by exec (`wrap`).

Why in-process: checks fork warm judges and candidates from a server that imported torch (a
fresh interpreter costs seconds), so the box must be enterable by a forked Python process;
a fresh process is started through this file (`python -I -S isolation.py PLAN -- ARGV`),
which makes the same box and execs ARGV. One engine, so one policy: the plan's mounts.
This file imports nothing of the project (the exec path stays a few tens of milliseconds).

How (`enter(plan)` in a freshly forked, single-threaded process P):
- P forks C, which unshares user, mount, PID, network, IPC and UTS namespaces. As root, P (still
  root of the host) maps the box's uid to itself (65534 -> 65534): C keeps capabilities over its
  own namespaces, and the uid it later takes is that uid on the host too, so root's files stay
  root's. As a user, C maps its own uid (what an unprivileged user namespace allows).
- C forks I, PID 1 of the new PID namespace. I builds an empty root (tmpfs), binds the plan's
  paths in (read-only ones remounted read-only, submounts too), mounts a fresh /proc, a minimal
  /dev with the GPU nodes, tmpfs /tmp and /dev/shm, pivots into it and drops the host's tree.
  The binds are made while I is still uid 0 of the host (as root), so a path under /root
  (mode 700: pyenv) is reachable; then I takes the box's uid and gid, no supplementary groups.
- I forks the code's process, which drops every capability, sets no_new_privs and the process
  bound, and returns from `enter`. I waits for it, reports how it ended to P over a pipe, and
  exits; the kernel then kills whatever is left in the namespace.
- P stays outside as the relay and watchdog (scripts/box_relay.py): it sums the box's memory (proportional set size of
  every process under it), counts its processes and the size of its writable paths, and kills
  the box with a reserved exit status (box.RESERVED) when one passes its bound; otherwise it
  ends exactly as the code ended.

Where the kernel refuses (user namespaces off, seccomp), `enter` returns why and nothing changed;
callers refuse to run untrusted code then, unless BAKEOFF_ISOLATION=none was set on purpose.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import resource
import signal
import socket
import struct
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
_KEEP_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC | 1024 | 2048 | 4096  # noatime, nodiratime, relatime
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine, 155)
_PR_SET_PDEATHSIG, _PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 1, 3, 4
_PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 24, 38
_CAP_VERSION_3 = 0x20080522
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
EXIT_MEMORY, EXIT_PROCS, EXIT_SCRATCH, EXIT_BROKEN = 90, 91, 92, 70  # as scripts/box.py says
MARK = "BAKEOFF_IN_BOX"
REFUSED = (
    "the sandbox cannot be made here ({why}): it needs user, mount, PID and network "
    "namespaces (allow them: sysctl user.max_user_namespaces=15000, "
    "kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0, or run "
    "as root); untrusted code was not run. BAKEOFF_ISOLATION=none runs it unboxed on purpose."
)
WARNING = (
    "WARNING: untrusted code is NOT in its box (BAKEOFF_ISOLATION=none): it can reach the "
    "network, read this user's files and processes' environments, and change what it can write."
)

_inside = False
_probed: str | None | bool = False  # False: not probed yet


def wanted(env=None) -> bool:
    value = (os.environ if env is None else env).get("BAKEOFF_ISOLATION", "box")
    return value.lower() not in ("none", "off", "0")


def inside() -> bool:
    """Whether this process runs in a box: it entered one, or a process in one started it
    (the mark is inherited, and the kernel says this is a user namespace of a few ids)."""
    if _inside:
        return True
    if os.environ.get(MARK) != "1":
        return False
    try:
        with open("/proc/self/uid_map") as f:
            return sum(int(line.split()[2]) for line in f if line.strip()) <= 2
    except (OSError, IndexError, ValueError):
        return False


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


def _mount(source, target, fstype, flags, data=None) -> None:
    libc = _libc()
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
    enc = [None if s is None else os.fsencode(s) for s in (source, target, fstype, data)]
    _check(libc.mount(enc[0], enc[1], enc[2], flags, enc[3]), f"mount {target}")


def _pivot(new: str, old: str) -> None:
    libc = _libc()
    _check(libc.syscall(SYS_PIVOT_ROOT, os.fsencode(new), os.fsencode(old)), "pivot_root")


def _read_only(target: str) -> None:
    """Remount `target` and every mount below it read-only, keeping the flags the kernel
    locked (nosuid, nodev... of the host's mounts)."""
    below = [target]
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                point = line.split()[4].replace("\\040", " ")
                if point.startswith(target.rstrip("/") + "/"):
                    below.append(point)
    except OSError:
        pass
    for point in below:
        try:
            kept = os.statvfs(point).f_flag & _KEEP_FLAGS
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
        except OSError:
            if point == target:
                raise


def _make_point(path: str, like: str) -> None:
    if os.path.isdir(like):
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.exists(path):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


def _bind(src: str, dest: str, read_only: bool) -> None:
    _make_point(dest, src)
    _mount(src, dest, None, MS_BIND | MS_REC)
    if read_only:
        _read_only(dest)


def _hide_cgroups(new: str) -> None:
    """/sys/fs/cgroup as an empty read-only directory: the host's cgroup mounts stay writable
    after a read-only remount of /sys fails on them (locked flags), and nothing in a box has
    any business there."""
    target = new + "/sys/fs/cgroup"
    if os.path.isdir(target):
        _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4k")


def _loopback_up() -> None:
    """Bring up the box's own loopback (a plan with "loopback": a process in the box talks to
    another one in it, e.g. the Claude Code CLI to its forwarder). It is the network namespace's
    own: nothing of the host's loopback is reachable through it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def _build_root(plan: dict) -> None:
    """In I: the plan's file system as this process's root (see the module's docstring)."""
    size = plan["bounds"]["scratch_bytes"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    os.mkdir("/tmp/newroot")
    os.mkdir("/tmp/oldroot")
    _pivot("/tmp", "/tmp/oldroot")  # the host's tree is /oldroot from here on
    os.chdir("/")
    new = "/newroot"
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=755")
    os.makedirs(new + "/tmp")  # first: the plan's paths under /tmp are bound over it
    _mount("tmpfs", new + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    for kind, src, dest in plan["mounts"]:
        if kind == "symlink":
            os.symlink(src, new + dest)
        else:
            _bind("/oldroot" + src, new + dest, read_only=kind == "ro")
    _hide_cgroups(new)
    os.makedirs(new + "/proc", exist_ok=True)
    _mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    dev = new + "/dev"
    os.makedirs(dev, exist_ok=True)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID, "size=64k,mode=755")
    for node in plan["devices"]:
        _bind("/oldroot" + node, new + node, read_only=False)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0")):
        os.symlink(target, f"{dev}/{name}")
    os.symlink("/proc/self/fd/1", f"{dev}/stdout")
    os.symlink("/proc/self/fd/2", f"{dev}/stderr")
    os.makedirs(dev + "/shm")
    _mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    _mount(None, dev, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID)
    _mount(None, new, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(new)
    _pivot(".", ".")  # the empty root over the one that held the host's tree
    _check(_libc().umount2(b".", MNT_DETACH), "umount the host's tree")
    os.chdir("/")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]


def _drop_capabilities() -> None:
    libc = _libc()
    header = _CapHeader(_CAP_VERSION_3, 0)
    _check(libc.capset(ctypes.byref(header), (_CapData * 2)()), "capset")
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _die_with_parent(parent: int | None) -> None:
    """SIGKILL when the parent goes (`parent`: its pid, to close the race; None for PID 1,
    whose parent is outside its namespace and reads as 0)."""
    _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(EXIT_BROKEN)


def _map_self(uid: int, gid: int) -> None:
    """As a user: map this process's own ids (all an unprivileged user namespace allows). A
    non-dumpable process's /proc/self files belong to root, hence dumpable for these writes."""
    libc = _libc()
    dumpable = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        try:
            _write("/proc/self/setgroups", "deny")
        except FileNotFoundError:
            pass
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
    finally:
        libc.prctl(_PR_SET_DUMPABLE, 1 if dumpable == 1 else 0, 0, 0, 0)


def _readable_by_the_relay() -> None:
    """As a user: make this process of the box's plumbing (P, C, and I, which inherits it)
    dumpable again. A fork of a non-dumpable judge is non-dumpable, and a user's relay cannot
    read the proportional set size of such a process; it counts its resident pages instead,
    which holds every page the fork shares with its parent, once per fork (docs/testing.md
    has the counts). The code cannot reach them: P and C are outside its PID namespace, and
    I keeps capabilities the code drops, which the kernel asks of whoever traces or reads it
    (tests/test_isolation.py tries). The code's process inherits it; a judge makes itself
    non-dumpable again (sandbox.protect_self)."""
    _libc().prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)


def _grant(path: str, uid: int) -> None:
    """An access ACL giving `uid` rwx on `path`, its owner unchanged (git refuses a work tree
    whose top another user owns). Written as the kernel's xattr; OSError where unsupported."""
    mode = os.stat(path).st_mode
    entries = [(1, (mode >> 6) & 7, -1), (2, 7, uid), (4, (mode >> 3) & 7, -1), (0x10, 7, -1)]
    entries.append((0x20, mode & 7, -1))
    data = struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, perm, ident & 0xFFFFFFFF) for tag, perm, ident in entries
    )
    os.setxattr(path, "system.posix_acl_access", data)


def _prepare_host(plan: dict) -> None:
    """As root, before entering: the box's uid may write its writable paths (made by the
    trusted side for this box: they become its; a git work tree's top keeps its owner and
    grants it by an ACL). Read-only paths, and read-only paths inside writable ones (a
    workspace's .git), are left as they are."""
    uid, gid = plan["uid"], plan["gid"]
    frozen = {src for kind, src, _ in plan["mounts"] if kind == "ro"}
    for kind, src, _ in plan["mounts"]:
        if kind == "rw" and os.path.isdir(src):
            try:  # a git work tree keeps its owner (git trusts no other); the rest is the box's
                if not os.path.isdir(os.path.join(src, ".git")):
                    raise OSError("not a work tree")
                _grant(src, uid)
            except OSError:
                os.lchown(src, uid, gid)
            for root, dirs, files in os.walk(src):
                dirs[:] = [d for d in dirs if os.path.join(root, d) not in frozen]
                for name in (os.path.join(root, n) for n in dirs + files):
                    if name not in frozen and os.lstat(name).st_uid != uid:
                        try:
                            os.lchown(name, uid, gid)
                        except OSError:
                            pass
        elif kind == "rw":
            os.lchown(src, uid, gid)
    # Read-only paths keep their modes: one the box's uid cannot read was refused when the
    # plan was made (box.plan), never opened up here.


def _relay_module():
    try:
        # here: this file also runs bare (`wrap`: -I -S), where `scripts` is not importable
        from kernel_bakeoff.scripts import box_relay
    except ImportError:  # run as a script (`wrap`): its directory is not on sys.path
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import box_relay  # type: ignore[no-redef]
    return box_relay


def relay_status(pid: int) -> int:
    return _relay_module().status(pid)


def close_except(*keep: int) -> None:
    _relay_module().close_except(*keep)


def enter(plan: dict | None = None) -> str | None:
    """Move this freshly forked, single-threaded process into the box `plan` (box.plan()).

    Returns None in the boxed process (two forks down; those above relay and never return), or
    why the box could not be made (then nothing changed). BAKEOFF_ISOLATION=none: returns that,
    and the caller runs the code unboxed with a loud line."""
    global _inside
    if inside() and not (plan or {}).get("nested"):
        return None
    if not wanted():
        return "BAKEOFF_ISOLATION=none"
    if plan is None:  # nothing of the host writable
        # here: this file also runs bare (`wrap`: -I -S), where `scripts` is not importable
        from kernel_bakeoff.scripts import box

        plan = box.plan(cwd=os.getcwd())
    root = os.geteuid() == 0
    if root:
        _prepare_host(plan)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    up_r, up_w = os.pipe()  # C -> P: namespaces made, or why not
    go_r, go_w = os.pipe()  # P -> C: ids mapped
    rep_r, rep_w = os.pipe()  # I -> P: how the code ended, or what failed
    relay = _relay_module()  # imported before the fork: the relay must not fail importing
    leader = os.getsid(0) == os.getpid()
    me = os.getpid()
    pid = os.fork()
    if pid:
        for fd in (up_w, go_r, rep_w):
            os.close(fd)
        why = os.read(up_r, 500).decode(errors="replace")
        if why != "ok":
            relay_status(pid)
            for fd in (up_r, go_w, rep_r):
                os.close(fd)
            return why or "the namespaces' process ended before making them"
        if root:
            try:
                # 0 too, for I to make the box's root as root (files it creates need an owner
                # the namespace maps); the code never runs as 0 and holds no capability.
                _write(f"/proc/{pid}/uid_map", f"0 0 1\n{plan['uid']} {plan['uid']} 1\n")
                gids = sorted({0, plan["gid"], *plan.get("groups", [])})
                _write(f"/proc/{pid}/gid_map", "".join(f"{g} {g} 1\n" for g in gids))
            except OSError as exc:
                os.kill(pid, signal.SIGKILL)
                relay_status(pid)
                return f"mapping uid {plan['uid']}: {exc}"
        os.write(go_w, b"go")
        if not root:
            _readable_by_the_relay()  # P is in the tree of the box it may be nested in
        relay.relay(pid, rep_r, plan)
    _die_with_parent(me)
    for fd in (up_r, go_w, rep_r):
        os.close(fd)
    try:
        _check(
            _libc().unshare(
                CLONE_NEWUSER
                | CLONE_NEWNS
                | CLONE_NEWPID
                | CLONE_NEWNET
                | CLONE_NEWIPC
                | CLONE_NEWUTS
            ),
            "unshare",
        )
        if not root:
            _map_self(plan["uid"], plan["gid"])
            _readable_by_the_relay()
    except OSError as exc:
        os.write(up_w, str(exc).encode()[:500])
        os._exit(0)
    os.write(up_w, b"ok")
    if os.read(go_r, 2) != b"go":
        os._exit(EXIT_BROKEN)
    os.close(up_w)
    os.close(go_r)
    pid = os.fork()
    if pid:  # C: nothing to do but end with I (P reads how the code ended from I's pipe)
        os.close(rep_w)
        os._exit(0 if relay_status(pid) == 0 else EXIT_BROKEN)
    try:
        _die_with_parent(None)
        cwd = plan.get("cwd") or os.getcwd()
        _build_root(plan)
        if plan.get("loopback"):  # while this process holds CAP_NET_ADMIN over its namespace
            _loopback_up()
        for cap in range(64):  # while this process still may (CAP_SETPCAP)
            _libc().prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
        if root:  # only the GPU nodes' groups; a user's namespace denies setgroups (keeps its own)
            os.setgroups(plan.get("groups", []))
        os.setresgid(plan["gid"], plan["gid"], plan["gid"])
        os.setresuid(plan["uid"], plan["uid"], plan["uid"])
        _die_with_parent(None)  # a change of uid clears it
        os.chdir(cwd if os.path.isdir(cwd) else "/")
    except OSError as exc:  # half-made: never run untrusted code like this
        os.write(rep_w, f"!{exc}".encode()[:500])
        os._exit(EXIT_BROKEN)
    pid = os.fork()  # the code must not be PID 1, which ignores the signals it sends itself
    if pid:
        close_except(rep_w)
        code = relay_status(pid)
        os.write(rep_w, str(code).encode())
        os._exit(0)
    os.close(rep_w)
    try:
        _drop_capabilities()
        procs = plan["bounds"]["procs"]
        resource.setrlimit(resource.RLIMIT_NPROC, (procs, procs))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (OSError, ValueError) as exc:
        print(f"the sandbox failed after its namespaces were made: {exc}", file=sys.stderr)
        os._exit(EXIT_BROKEN)
    if leader:  # as its caller made it
        os.setsid()
    _inside = True  # forks inherit it; a process exec'd by `main` gets MARK
    return None


def probe(plan: dict | None = None) -> str | None:
    """Whether the box can be made here (None) or why not; tried once per process in a fork."""
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
        why = enter(plan or _probe_plan())
        if why is None:
            why = "" if len([p for p in os.listdir("/proc") if p.isdigit()]) <= 2 else "procfs"
        os.write(write, why.encode()[:500])
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        answer = f.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if not answer and code != 0:
        answer = f"the sandbox failed after its namespaces were made (exit status {code})"
    _probed = answer or None
    return _probed


def _probe_plan() -> dict:
    # here: this file also runs bare (`wrap`: -I -S), where `scripts` is not importable
    from kernel_bakeoff.scripts import box

    return box.plan(cwd="/")


def refusal() -> str | None:
    """One line for operators where untrusted code must not run (the box cannot be made and
    BAKEOFF_ISOLATION=none was not set), else None."""
    why = probe()
    if why and why != "BAKEOFF_ISOLATION=none":
        return REFUSED.format(why=why)
    return None


def warning() -> str | None:
    """The loud line where boxes are off on purpose, else None."""
    return WARNING if not wanted() else None


def wrap(argv: list[str], env, plan: dict | None = None) -> list[str]:
    """The command line that runs `argv` (environment `env`) in the box `plan`: this file run
    by an interpreter that imports nothing else."""
    if (inside() and not (plan or {}).get("nested")) or not wanted(env):
        return argv
    if plan is None:  # nothing of the host writable
        # here: this file also runs bare (`wrap`: -I -S), where `scripts` is not importable
        from kernel_bakeoff.scripts import box

        plan = box.plan(cwd=os.getcwd())
    here = os.path.abspath(__file__)
    return [sys.executable, "-I", "-S", here, json.dumps(plan), "--", *argv]


def main(argv: list[str]) -> int:
    plan, argv = json.loads(argv[0]), argv[2:]
    why = enter(plan)
    if why == "BAKEOFF_ISOLATION=none":
        print(WARNING, file=sys.stderr, flush=True)
    elif why:
        print(REFUSED.format(why=why), file=sys.stderr, flush=True)
        return 2
    else:
        os.environ[MARK] = "1"
    os.execvp(argv[0], argv)
    return 127  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
