"""One bake-off at a time in a run directory: a second one, in another process, is refused in one
line before it writes anything; the lock goes with its holder's process, killed or not."""

import os
import signal
import subprocess
import sys

import pytest

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.run.lock import LOCK_FILE, held_here, run_lock

from .conftest import EXAMPLES, ROOT, run_cli

HOLD = "import sys, time\nfrom kernel_bakeoff.tasks.run.lock import run_lock\nwith run_lock(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(600)\n"


@pytest.fixture
def holder(tmp_path):
    """Another process holding the lock of tmp_path/run."""
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "held"
    yield run_dir, proc
    proc.kill()
    proc.wait()


def test_a_second_holder_is_refused_with_the_first_ones_pid(holder):
    run_dir, proc = holder
    with pytest.raises(BadInput) as refused:
        with run_lock(run_dir):
            pass
    assert f"another bake-off is running in this run directory (pid {proc.pid} on" in str(
        refused.value
    )
    assert str(run_dir) in str(refused.value)


def test_the_lock_goes_with_its_holder_even_when_killed(holder):
    run_dir, proc = holder
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with run_lock(run_dir):
        assert f"pid {os.getpid()} on" in (run_dir / LOCK_FILE).read_text()


def test_taken_once_in_one_process_and_no_trace_where_nothing_was_written(tmp_path):
    """`bakeoff run` takes it and hands its flow the opened run (flows/opening.py): a second
    take in the same process is a bug, not a count."""
    run_dir = tmp_path / "runs" / "op-1"
    with run_lock(run_dir):
        assert held_here(run_dir) and (run_dir / LOCK_FILE).is_file()
        with pytest.raises(RuntimeError, match="holds its lock already"):
            with run_lock(run_dir):
                pass
        assert held_here(run_dir)
    assert not held_here(run_dir)
    assert not (tmp_path / "runs").exists()  # it made them, and nothing else was written
    with run_lock(run_dir):
        (run_dir / "progress.json").write_text("{}")
    assert (run_dir / "progress.json").is_file()


@pytest.mark.slow
def test_bakeoff_run_into_a_busy_run_directory_is_one_line_and_touches_nothing(holder, tmp_path):
    run_dir, proc = holder
    (run_dir / "progress.json").write_text('{"phase": "discover"}')
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    done = run_cli(
        "run", str(EXAMPLES / "rmsnorm_torch"), "--run-dir", str(run_dir),
        env={"BAKEOFF_LOCK_DIR": str(tmp_path / "locks")},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"bakeoff run: error: {run_dir}: another bake-off is running")
    assert f"(pid {proc.pid} on" in done.stderr and done.stderr.count("\n") == 1
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before


def test_a_flow_takes_an_opened_run_only_from_the_process_that_opened_it(tmp_path, frozen_rmsnorm):
    """A flow's parameters are whatever its caller typed (a UI's form too): an opened run is
    believed only where this process holds its lock, and its frozen task must verify."""
    from kernel_bakeoff.flows.opening import Opened, check_opened
    from kernel_bakeoff.tasks.models.request import BakeoffRequest
    from kernel_bakeoff.tasks.run.input_identity import Frozen, SpecSource

    kernel = str(EXAMPLES / "rmsnorm_torch")
    frozen = Frozen.read(frozen_rmsnorm, SpecSource(input=kernel, frozen_from=kernel))
    run_dir = tmp_path / "run"
    request = BakeoffRequest(kernel_path=kernel, run_dir=str(run_dir))
    opened = Opened(request=request, run_dir=str(run_dir), frozen=frozen)
    with pytest.raises(BadInput, match="not locked by this process"):
        check_opened(opened)
    with run_lock(run_dir):
        assert check_opened(opened) is opened
        forged = frozen.model_copy(update={"oracle_sha256": "0" * 64})
        with pytest.raises(BadInput, match="not the task that was frozen"):
            check_opened(opened.model_copy(update={"frozen": forged}))
