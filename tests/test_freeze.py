import json
import os

import pytest

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.freeze import freeze, load_task

from .conftest import EXAMPLES


def test_freeze_writes_read_only_oracle(frozen_rmsnorm):
    names = {p.name for p in frozen_rmsnorm.iterdir()}
    assert names == {
        "baseline_src",
        "spec.json",
        "fingerprint.json",
        "baseline.json",
        "MANIFEST.json",
    }
    baseline = json.loads((frozen_rmsnorm / "baseline.json").read_text())
    for wl in ("tokens_256", "tokens_1k"):
        assert baseline["workloads"][wl]["status"] == "PASSED"
        assert baseline["workloads"][wl]["median_ms"] > 0
    fp = json.loads((frozen_rmsnorm / "fingerprint.json").read_text())
    assert fp["arch"] in ("cpu",) or fp["arch"].startswith(("sm_", "gfx"))
    assert not os.access(frozen_rmsnorm / "spec.json", os.W_OK) or os.geteuid() == 0
    assert not (frozen_rmsnorm / "spec.json").stat().st_mode & 0o222
    spec, src, _ = load_task(frozen_rmsnorm)
    assert spec.name == "rmsnorm" and (src / "kernel.py").is_file()


def test_same_input_twice_gives_same_oracle(tmp_path, frozen_rmsnorm):
    again = freeze(EXAMPLES / "rmsnorm_torch", tmp_path / "again")
    first = json.loads((frozen_rmsnorm / manifest.MANIFEST).read_text())
    second = json.loads((again / manifest.MANIFEST).read_text())
    assert first["oracle_sha256"] == second["oracle_sha256"]
    for name in ("spec.json", "baseline_src/kernel.py", "baseline_src/op.toml"):
        assert first["files"][name] == second["files"][name]


def test_tampered_oracle_is_refused(tmp_path):
    task = freeze(EXAMPLES / "rmsnorm_torch", tmp_path / "task")
    kernel = task / "baseline_src" / "kernel.py"
    kernel.parent.chmod(0o755)
    kernel.chmod(0o644)
    kernel.write_text(kernel.read_text() + "\n# edited\n")
    with pytest.raises(BadInput, match="modified"):
        load_task(task)


def test_a_freeze_found_in_place_is_checked_against_its_input(tmp_path, monkeypatch):
    """A resumed run finds its task frozen: kept for the same input, refused for a changed one
    (the one opening asks once a run, so nothing in a process remembers an earlier ask)."""
    import shutil

    from kernel_bakeoff.tasks.check import freezing

    src = tmp_path / "op"
    shutil.copytree(EXAMPLES / "rmsnorm_torch", src)
    out = tmp_path / "task"
    monkeypatch.setattr(freezing, "_freeze_in_subprocess", lambda k, o, *_: freeze(k, o))
    assert freezing.freeze_isolated(src, out) == out.resolve()
    assert freezing.freeze_isolated(src, out) == out.resolve()
    (src / "kernel.py").write_text((src / "kernel.py").read_text() + "\n# changed\n")
    with pytest.raises(BadInput, match="holds something else"):
        freezing.freeze_isolated(src, out)


def test_bad_input_in_the_freeze_process_comes_back_as_bad_input(tmp_path):
    """tasks/check/freezing.py runs the harness's entry point (`python -m kernel_bakeoff.scripts.freeze`) in a process
    of its own; what it refuses there is BadInput here, with its words."""
    from kernel_bakeoff.tasks.check import freezing

    out = tmp_path / "task"
    out.mkdir()
    (out / "stray").write_text("not a task")
    with pytest.raises(BadInput, match="holds something else"):
        freezing.freeze_isolated(EXAMPLES / "rmsnorm_torch", out)
