"""scripts/setup_env.sh where torch cannot be installed: one line of its own after pip's,
naming the index it tried and the two ways out (another index, a wheel on disk)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_a_torch_install_that_fails_says_the_index_and_the_ways_out(tmp_path):
    for name in ("scripts/setup_env.sh", "pyproject.toml"):  # it works in its script's checkout
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "wheels").mkdir()  # find-links with no torch wheel in it
    index = "http://127.0.0.1:9/simple"  # nothing listens on the discard port
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PIP_CONFIG_FILE": "/dev/null",  # the machine's own indexes and wheels are not asked
        "PIP_FIND_LINKS": str(tmp_path / "wheels"),
        "PIP_RETRIES": "0",
        "PIP_DEFAULT_TIMEOUT": "3",
        "TORCH_INDEX_URL": index,
    }
    # The venv is made from the interpreter this one's venv came from; one that imports torch
    # itself would be kept (--system-site-packages) and nothing installed.
    base = Path(sys.base_prefix) / "bin" / "python3"
    if subprocess.run([base, "-c", "import torch"], capture_output=True).returncode == 0:
        pytest.skip(f"{base} imports torch: the set-up keeps it and installs none")
    env["PYTHON"] = str(base)
    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "setup_env.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("setup: error: installing torch=="), last
    for fragment in (f"from {index} failed", "TORCH_INDEX_URL=", "PIP_FIND_LINKS=DIR"):
        assert fragment in last, last
    assert not list(tmp_path.glob(".venv/.installed-*"))  # not marked as set up
