"""What an input may hold before it becomes an oracle: real files inside its own directory, and
names that are plain path components.

A frozen task is a copy of its sources, hashed. A symbolic link in the input would copy (and
hash into the oracle) whatever it points at on this host (`/etc/passwd`, a credentials file), and
an entry outside the directory would not be copied at all, so editing it later would change the
oracle under an unchanged id. Both are refused here, with one line naming the path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput

NAME_MAX = 100  # an op name becomes a directory name (runs/<op>-<hash>/, runs/tasks/<op>/)
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]*")


def name_problem(name: str) -> str | None:
    """Why `name` cannot name an op (it becomes a directory name), or None."""
    if not name:
        return "the op name is empty"
    if len(name) > NAME_MAX:
        return f"the op name has {len(name)} characters, at most {NAME_MAX} (it names directories)"
    if not _NAME.fullmatch(name):
        return (
            f"the op name {name!r} is not a plain file name: use letters, digits, '_', '.', '+' "
            "and '-', not starting with '.' (it names directories)"
        )
    return None


def safe_name(text: str) -> str:
    """`text` (a file's stem, say) made into a name `name_problem` accepts."""
    name = re.sub(r"[^A-Za-z0-9._+-]+", "_", text).lstrip(".-+") or "op"
    return name[:NAME_MAX]


def refuse_links(root: Path) -> None:
    """BadInput naming the first symbolic link under the directory `root` (never followed)."""
    root = Path(root)
    if not root.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(root):  # does not follow links to directories
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            if path.is_symlink():
                try:
                    target = os.readlink(path)
                except OSError:
                    target = "?"
                raise BadInput(
                    str(path),
                    f"is a symbolic link (to {target}); a frozen oracle holds copies of real "
                    "files only: put the file itself there",
                )


def inside(src_dir: Path, file_part: str, where: str) -> Path:
    """`src_dir / file_part`, or BadInput when it names a file outside `src_dir` (an absolute
    path, `..`): a source that is not copied into the task is not part of the oracle."""
    rel = Path(file_part)
    if rel.is_absolute() or ".." in rel.parts:
        raise BadInput(
            where,
            f"{file_part!r} is outside the op directory; every source of the oracle is copied "
            "and hashed, so it must be a file inside it",
        )
    return Path(src_dir) / rel
