"""The trusted side of a box (scripts/isolation.py): the relay outside it waits for the box,
watches its bounds (scripts/box.py) and ends as its code ended, or with the bound's reserved
status. Like isolation.py, it imports nothing of the project (the exec path runs it with
`python -I -S`).
"""

from __future__ import annotations

import os
import select
import signal
import sys

EXIT_MEMORY, EXIT_PROCS, EXIT_SCRATCH, EXIT_BROKEN = 90, 91, 92, 70  # as scripts/box.py says
TICK_S = 0.1


def status(pid: int) -> int:
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


def close_except(*keep: int) -> None:
    for fd in range(3, 1024):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _tree(root: int) -> list[int]:
    """`root` and its descendants, from the kernel's children lists (only the box's processes
    are read, not every process of the host); the whole /proc where those lists are missing."""
    found, stack = [root], [root]
    while stack:
        pid = stack.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    kids = [int(k) for k in f.read().split()]
            except FileNotFoundError:
                return _tree_from_stat(root)
            except (OSError, ValueError):
                continue
            found += kids
            stack += kids
    return found


def _tree_from_stat(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    ppid = int(f.read().rpartition(b")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, stack = [root], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _resident(pid: int) -> int:
    """Anonymous and shared-memory pages resident in `pid` (cheap: /proc/PID/status, which
    every user may read); pages shared by forks count in each."""
    total = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith((b"RssAnon:", b"RssShmem:")):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return total


def _proportional(pid: int) -> int | None:
    """The same pages counted in proportion to the processes sharing them (the warm server's
    too), or None where this user may not read them (non-dumpable processes of a user)."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith((b"Pss_Anon:", b"Pss_Shmem:")):
                    total += int(line.split()[1]) * 1024
    except PermissionError:
        return None
    except (OSError, ValueError):
        return 0
    return total


def _memory(pids: list[int], bound: int) -> int:
    """The box's memory as compared with `bound`: the cheap count first, which is never below
    the proportional one; only above the bound are the proportional sizes walked (reading
    them walks every mapping of torch's processes: too costly for every tick)."""
    cheap = {pid: _resident(pid) for pid in pids}
    if sum(cheap.values()) <= bound:
        return sum(cheap.values())
    exact = {pid: _proportional(pid) for pid in pids}
    return sum(cheap[p] if exact[p] is None else exact[p] for p in pids)


def _disk(paths: list[str], cap: int = 200_000) -> int:
    total, seen, stack = 0, 0, list(paths)
    while stack and seen < cap:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    seen += 1
                    st = entry.stat(follow_symlinks=False)
                    total += st.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return total


def relay(pid: int, report: int, plan: dict) -> None:
    """P: wait for the box, watching its bounds; end as its code ended, or with the bound's
    reserved status (and a line in the log) when one was passed."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda _s, _f: os.kill(pid, signal.SIGKILL))
    close_except(report)
    bounds, watch = plan["bounds"], plan["watch"]
    passed, tick, raw = None, 0, 0
    while passed is None:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        tree = _tree(pid)
        if len(tree) - 2 > bounds["procs"]:  # C and I are the box's, not the code's
            passed = EXIT_PROCS, f"more than {bounds['procs']} processes"
        elif _memory(tree, bounds["memory_bytes"]) > bounds["memory_bytes"]:
            passed = EXIT_MEMORY, f"more than {bounds['memory_bytes'] / 2**30:g} GiB of memory"
        elif tick % 10 == 0 and watch and _disk(watch) > bounds["scratch_bytes"]:
            passed = EXIT_SCRATCH, f"more than {bounds['scratch_bytes'] / 2**30:g} GiB written"
        tick += 1
        if select.select([report], [], [], TICK_S)[0]:  # the code ended: C follows at once
            raw = os.waitpid(pid, 0)[1]
            break
    if passed is not None:
        for p in reversed(_tree(pid)):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        status(pid)
        print(f"the sandbox killed untrusted code: it used {passed[1]}", file=sys.stderr)
        os._exit(passed[0])
    told = os.read(report, 600).decode(errors="replace").strip()
    if not told and os.waitstatus_to_exitcode(raw) == EXIT_BROKEN:
        told = "!its PID 1 ended before the code started"
    if told.startswith("!"):
        print(f"the sandbox could not be made: {told[1:]}", file=sys.stderr, flush=True)
        os._exit(EXIT_BROKEN)
    code = int(told) if told.lstrip("-").isdigit() else os.waitstatus_to_exitcode(raw)
    _end_as(1 if code in (EXIT_MEMORY, EXIT_PROCS, EXIT_SCRATCH, EXIT_BROKEN) else code)
