import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
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
