"""What the box binds: never the directory of the script that started the orchestrator (a
user's `python /tmp/x.py` bound the host's whole /tmp into every box, read-only, over the box's
own /tmp and the check's work directory under it), nor the temporary directory as a whole."""

import sys
import tempfile
from pathlib import Path

from kernel_bakeoff.scripts import box


def test_the_starting_scripts_folder_and_tmp_are_not_bound(tmp_path, monkeypatch):
    script_dir = tmp_path / "scripts-of-a-user"
    script_dir.mkdir()
    (script_dir / "notes.txt").write_text("a password")
    monkeypatch.setattr(sys, "path", [str(script_dir), tempfile.gettempdir(), *sys.path])
    bound = [src for kind, src, _ in box.plan()["mounts"] if kind != "symlink"]
    assert str(script_dir.resolve()) not in bound
    assert str(Path(tempfile.gettempdir()).resolve()) not in bound
    assert any("site-packages" in src or src.startswith(sys.prefix) for src in bound)
    work = tmp_path / "check"
    work.mkdir()
    plan = box.plan(write=[work])
    assert ["rw", str(work.resolve()), str(work.resolve())] in plan["mounts"]
