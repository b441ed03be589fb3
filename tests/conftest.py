import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Prefect's embedded server gets 20 s to start by default; on a loaded two-core machine a
# `bakeoff run` subprocess was seen to die waiting for it before the run began.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
# Prefect reads PREFECT_HOME when it is imported: a throwaway one for the session.
if "PREFECT_HOME" not in os.environ:
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="bakeoff-prefect-home-")
    atexit.register(shutil.rmtree, os.environ["PREFECT_HOME"], ignore_errors=True)
# Device leases of this session's lanes, apart from any other session's or user's on the host
# (the default, /tmp/kernel-bakeoff-locks-UID, is shared: one checkout's tests waited on another's).
if "BAKEOFF_LOCK_DIR" not in os.environ:
    os.environ["BAKEOFF_LOCK_DIR"] = tempfile.mkdtemp(prefix="bakeoff-test-locks-")
    atexit.register(shutil.rmtree, os.environ["BAKEOFF_LOCK_DIR"], ignore_errors=True)
try:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
except ImportError:  # pragma: no cover
    pass


def run_cli(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run the real `bakeoff` command line in a subprocess."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=cwd or ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="session")
def frozen_rmsnorm(tmp_path_factory) -> Path:
    from scripts.freeze import freeze

    return freeze(EXAMPLES / "rmsnorm_torch", tmp_path_factory.mktemp("tasks") / "rmsnorm")


@pytest.fixture(scope="session")
def prefect_api():
    """A temporary Prefect server (own SQLite database) for flows run in the test process."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield


@pytest.fixture(scope="session")
def campaign_run(prefect_api, tmp_path_factory):
    """A real two-round campaign of a wasteful rmsnorm (one lane a round, the lean kernel of
    examples/ checked by the harness): its directory and the report it returned. Shared by the
    campaign test and the HTML report test, so CI pays for these bake-offs once."""
    import shutil

    from flows.campaign import campaign

    from .campaign_doubles import CAMPAIGN, WASTEFUL

    problem = tmp_path_factory.mktemp("problem") / "rmsnorm_torch"
    shutil.copytree(EXAMPLES / "rmsnorm_torch", problem)
    (problem / "kernel.py").write_text(WASTEFUL)
    root = tmp_path_factory.mktemp("campaign") / "run"
    old = os.environ.get("BAKEOFF_LOCK_DIR")
    os.environ["BAKEOFF_LOCK_DIR"] = str(root.parent / "locks")
    try:
        final = campaign(
            str(problem),
            rounds=2,
            run_dir=str(root),
            mode="optimize",
            budget=1,
            samples=5,
            agents=CAMPAIGN,
        )
    finally:
        if old is None:
            del os.environ["BAKEOFF_LOCK_DIR"]
        else:
            os.environ["BAKEOFF_LOCK_DIR"] = old
    return root, final
