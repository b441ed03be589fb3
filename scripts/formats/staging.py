"""Scratch directories that a format writes its self-contained sources into, removed at exit."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput

_made: list[Path] = []


def scratch_dir(prefix: str) -> Path:
    """A fresh directory that lives until the process exits (freeze copies what it needs)."""
    path = Path(tempfile.mkdtemp(prefix=f"bakeoff-{prefix}-"))
    path.chmod(0o755)  # read by the boxes' uid (as root: nobody)
    _made.append(path)
    return path


def write_file(root: Path, relative: str, content: str, where: str) -> Path:
    """Write `content` at `root/relative`, refusing paths that would leave `root`."""
    rel = Path(relative)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise BadInput(where, f"source path {relative!r} must be relative and stay inside")
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


@atexit.register
def _remove_all() -> None:
    for path in _made:
        shutil.rmtree(path, ignore_errors=True)
