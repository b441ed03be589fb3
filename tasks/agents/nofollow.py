"""Copying what a model wrote out of its workspace without following a link it planted.

A check resolves the path the model named (`Tools.resolve`: inside the workspace, not the
oracle's sources) and then copies it out of the model's reach (`Workspace.snapshot`). The model
still acts in its workspace while that happens (the Claude Code CLI runs commands of its own),
so a directory it swaps for a link between the two would be followed. Here every component is
opened relative to the one before with O_NOFOLLOW, from the workspace's root, and the copy
reads from those descriptors: a link anywhere on the way refuses the copy.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Moved(Exception):
    """The path is not what was resolved: a component is a link, or it is gone."""


def _open_below(root: Path, relative: Path) -> tuple[int, bool]:
    """A descriptor of root/relative (and whether it is a directory), no link followed."""
    fd = os.open(root, _DIR)
    try:
        parts = relative.parts
        for i, part in enumerate(parts):
            if part in ("", ".", ".."):
                raise Moved(f"{relative}: not a plain path")
            last = i == len(parts) - 1
            try:
                nxt = os.open(part, _FILE if last else _DIR, dir_fd=fd)
            except OSError as exc:
                raise Moved(f"{relative}: {exc.strerror} at {part!r} (a link, or gone)") from None
            os.close(fd)
            fd = nxt
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        return fd, is_dir
    except BaseException:
        os.close(fd)
        raise


def _copy_file(fd: int, dest: Path) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return  # a FIFO, a device: never read
    with os.fdopen(os.dup(fd), "rb") as src, open(dest, "wb") as out:
        while chunk := src.read(1 << 20):
            out.write(chunk)


def copy_below(root: Path, source: Path, dest: Path, skip=frozenset()) -> None:
    """Copy `source` (a file or directory inside `root`) to `dest` (a file's path, or a
    directory made here), following no link on the way to it or within it. `skip`: relative
    paths left out. Moved when the path changed since it was resolved."""
    fd, is_dir = _open_below(Path(root), Path(source).relative_to(root))
    try:
        if not is_dir:
            _copy_file(fd, dest)
            return
        dest.mkdir(parents=True, exist_ok=True)
        for top, dirs, files, top_fd in os.fwalk(".", dir_fd=fd):  # follows no link
            rel_top = Path(top)
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for d in dirs:
                (dest / rel_top / d).mkdir(exist_ok=True)
            for name in files:
                if (rel_top / name).as_posix().removeprefix("./") in skip:
                    continue
                try:
                    child = os.open(name, _FILE, dir_fd=top_fd)
                except OSError:
                    continue  # a link (ELOOP) or gone: not copied
                try:
                    _copy_file(child, dest / rel_top / name)
                finally:
                    os.close(child)
    finally:
        os.close(fd)
