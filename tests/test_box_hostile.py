"""The hostile corpus (tests/corpus/hostile/): untrusted code stays in its box (scripts/box.py).

One candidate per class of the box's contract, each checked for real on a small frozen task:
the attack fails (refused with its reason, or harmlessly), nothing outside the box changed, and
an honest candidate checked under the same small bounds still passes. The model's command tool
is tried the same way. Bounds are set small through the environment (1 GiB of memory, 64
processes, 100 MiB of scratch) so the hogs cost little. As root here, the box runs as nobody;
`test_the_corpus_as_an_ordinary_user` runs a check as an ordinary user of the host too.
"""

import hashlib
import os
import socket
import subprocess
import sys
import threading
import uuid
from functools import partial
from pathlib import Path

import pytest

from kernel_bakeoff.scripts import isolation
from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze, measure_baseline
from kernel_bakeoff.scripts.verdict import Status

from .conftest import ROOT
from .ordinary_user import ordinary_user_prefix

HOSTILE = ROOT / "tests" / "corpus" / "hostile"
HONEST = ROOT / "tests" / "corpus" / "honest" / "rounding.py"
SMALL = {"samples": 3, "warmup": 1, "trials": 1}
BOUNDS = {"BAKEOFF_BOX_MEMORY_GB": "1", "BAKEOFF_BOX_PROCS": "64", "BAKEOFF_BOX_SCRATCH_GB": "0.1"}

pytestmark = pytest.mark.skipif(
    isolation.refusal() is not None, reason=f"no box here: {isolation.refusal()}"
)


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hostile") / "task"
    measure = partial(measure_baseline, samples=3, warmup=1, trials=1)
    return freeze(ROOT / "tests" / "corpus" / "rmsnorm_op", out, measure=measure)


@pytest.fixture(autouse=True)
def small_bounds(monkeypatch):
    for name, value in BOUNDS.items():
        monkeypatch.setenv(name, value)


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
        h.update(str(p.stat().st_mode).encode())
    return h.hexdigest()


def run(task: Path, name: str, **env) -> object:
    return check(task, HOSTILE / f"{name}.py", candidate_env=env, timeout_s=120, **SMALL)


def test_an_honest_candidate_passes_under_the_small_bounds(task):
    verdict = check(task, HONEST, timeout_s=120, **SMALL)
    assert verdict.status is Status.PASSED, (verdict.reason, verdict.output_tail)


def test_loopback_reaches_nothing_of_the_host(task):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    heard: list[bytes] = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            heard.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        verdict = run(task, "loopback", HOSTILE_PORT=str(listener.getsockname()[1]))
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert heard == []
    assert "loopback unreachable" in verdict.output_tail, verdict.output_tail
    assert verdict.status is Status.PASSED, verdict.reason  # harmless: it computed honestly


def test_site_packages_and_the_harness_stay_unwritten(task):
    name = f"hostile_{uuid.uuid4().hex}"
    verdict = run(task, "pth_writer", HOSTILE_NAME=name)
    assert "WROTE" not in verdict.output_tail, verdict.output_tail
    assert "refused" in verdict.output_tail
    planted = [p for d in sys.path if os.path.isdir(d) for p in Path(d).glob(f"{name}.*")]
    planted += list((ROOT / "scripts").glob(f"{name}.*"))
    assert planted == []
    assert verdict.status is Status.PASSED, verdict.reason


def test_home_credentials_proc_and_shadow_are_out_of_reach(task, tmp_path, monkeypatch):
    secret = f"pw-{uuid.uuid4().hex}"
    home = tmp_path / "home"
    db_env = home / ".config" / "kernel-bakeoff" / "db.env"
    db_env.parent.mkdir(parents=True)
    db_env.write_text(f"POSTGRES_PASSWORD={secret}\n")
    db_env.chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BAKEOFF_HISTORY_URL", f"postgresql://bakeoff:{secret}@127.0.0.1/bakeoff")
    monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:4200/api?{secret}")
    verdict = run(
        task, "secret_reader", HOSTILE_SECRET_REVERSED=secret[::-1], HOSTILE_DB_ENV=str(db_env)
    )
    assert "found nothing" in verdict.output_tail, verdict.output_tail
    assert verdict.status is Status.PASSED, verdict.reason
    assert secret not in verdict.model_dump_json()


def test_the_frozen_task_and_the_verdict_stay_the_trusted_sides(task):
    before = tree_digest(task)
    verdict = run(task, "task_rewriter")
    assert "the task is out of reach" in verdict.output_tail, verdict.output_tail
    assert tree_digest(task) == before
    assert verdict.status is Status.PASSED and verdict.speedup != 1000.0
    wrong = check(task, ROOT / "tests" / "corpus" / "adversarial" / "bf16_compute.py", **SMALL)
    assert wrong.status is not Status.PASSED  # the tolerance was not loosened


def test_a_memory_hog_is_killed_at_the_bound_and_booked_on_it(task):
    verdict = run(task, "memory_hog")
    assert verdict.status is Status.CRASHED, (verdict.status, verdict.reason)
    assert "exceeded the 1 GiB memory bound" in verdict.reason
    got = [int(ln.split()[1]) for ln in verdict.output_tail.splitlines() if ln.startswith("alloc")]
    assert got and max(got) < 3 * 1024, got[-3:]  # stopped near 1 GiB, far from its 6 GiB


def test_a_disk_hog_is_killed_at_the_scratch_bound(task):
    verdict = run(task, "disk_hog")
    assert verdict.status is Status.CRASHED, (verdict.status, verdict.reason)
    assert "exceeded the 0.1 GiB scratch bound" in verdict.reason
    wrote = [
        int(ln.split()[1]) for ln in verdict.output_tail.splitlines() if ln.startswith("wrote")
    ]
    assert wrote and max(wrote) < 1024, wrote[-3:]


def test_a_fork_bomb_stops_at_the_process_bound_and_leaves_nothing(task):
    token = f"bomb-{uuid.uuid4().hex}"
    verdict = run(task, "fork_bomb", HOSTILE_NAME=token)
    forked = [
        int(ln.split()[1]) for ln in verdict.output_tail.splitlines() if ln.startswith("FORK")
    ]
    if verdict.status is Status.CRASHED:  # the box was killed at the bound
        assert "process bound" in verdict.reason, verdict.reason
    else:  # the kernel refused its forks at the bound
        assert forked and forked[0] < 64, verdict.output_tail
        assert verdict.status is Status.PASSED, verdict.reason
    assert not _processes_running(token)


def test_a_parent_killer_is_booked_on_itself(task):
    """Its box's init ignores it and its judge is outside its PID namespace: nothing dies, and
    the file, which defines no kernel, is its own failure."""
    verdict = run(task, "parent_killer")
    assert verdict.status is Status.COMPILE_ERROR, (verdict.status, verdict.reason)
    assert "defines no 'rmsnorm'" in verdict.reason


def test_the_command_tool_stays_in_its_box(tmp_path, monkeypatch):
    """The model's run-command tool: writes outside the workspace, reads secrets of the home
    and of the orchestrator's processes, the network; only the workspace changes."""
    from kernel_bakeoff.tasks.agents.tools import LaneTools

    secret = f"sk-ant-{uuid.uuid4().hex}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(secret)
    monkeypatch.setenv("HOME", str(home))
    lane = tmp_path / "lane"
    ws_root = lane / "work"
    (ws_root / ".git" / "hooks").mkdir(parents=True)
    (ws_root / "TASK.md").write_text("the task\n")
    outside = tmp_path / "outside.txt"

    class WS:  # all the command tool uses of a Workspace: its root
        root = ws_root

    tools = LaneTools(
        WS,
        None,
        language="triton",
        mode="author",
        allowance=lambda: 0,
        command_timeout_s=20,
        output_chars=100000,
    )
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    script = f"""
        echo inside > {outside} || echo refused-outside
        echo hook > .git/hooks/post-commit || echo refused-hook
        echo changed > TASK.md || echo refused-task
        cat {home}/.ssh/id_rsa || echo refused-home
        grep -l {secret} /proc/*/environ 2>/dev/null || echo refused-proc
        {sys.executable} -c 'import socket; socket.create_connection(("127.0.0.1", {port}), timeout=2)' \
            2>/dev/null || echo refused-net
        echo mine > mine.txt && echo wrote-mine
    """
    try:
        out = tools.tool_run_command(script)
    finally:
        listener.close()
    # As a user, the box makes the parents of its bound paths (tmp_path's) in its own /tmp,
    # owned by the box's uid: the write outside succeeds there and never reaches the host,
    # which the assertion below the loop checks for every user.
    words = ("hook", "task", "home", "proc", "net") + (("outside",) if os.geteuid() == 0 else ())
    for word in words:
        assert f"refused-{word}" in out, out
    assert secret not in out and "wrote-mine" in out
    assert not outside.exists() and not (ws_root / ".git" / "hooks" / "post-commit").exists()
    assert (ws_root / "TASK.md").read_text() == "the task\n"
    assert (ws_root / "mine.txt").read_text() == "mine\n"


CHECK_AS_USER = """
import sys
from pathlib import Path
from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze, measure_baseline
from functools import partial
measure = partial(measure_baseline, samples=3, warmup=1, trials=1)
task = freeze(Path(sys.argv[1]), Path(sys.argv[2]) / "task", measure=measure)
for name in sys.argv[3:]:
    v = check(task, Path(name), samples=3, warmup=1, trials=1, candidate_env={
        "HOSTILE_SECRET_REVERSED": "detnalp-ton", "HOSTILE_DB_ENV": "/etc/shadow"})
    print("VERDICT", Path(name).stem, v.status.value, v.reason)
"""


def test_the_corpus_as_an_ordinary_user(tmp_path):
    """The orchestrator as an ordinary user of the host (as root: nobody, through a box that
    binds the interpreter in, tests/ordinary_user.py): the honest candidate passes, the
    secret reader finds nothing, the parent killer is booked on itself, the verdict writer and
    the clock forger of tests/corpus/judge/ win nothing."""
    work = tmp_path / "user"
    work.mkdir()
    names = [HONEST, HOSTILE / "secret_reader.py", HOSTILE / "parent_killer.py"]
    judge_corpus = ROOT / "tests" / "corpus" / "judge"
    names += [judge_corpus / "verdict_writer.py", judge_corpus / "clock_forger.py"]
    done = subprocess.run(
        [*ordinary_user_prefix(work), sys.executable, "-c", CHECK_AS_USER]
        + [str(ROOT / "tests" / "corpus" / "rmsnorm_op"), str(work), *map(str, names)],
        # The small bound of the tests above: an ordinary user's relay counts the resident
        # pages of the non-dumpable judge, shared with its forks, in full (docs/harness.md);
        # before the box's plumbing was made readable to it, this check counted 1379 MiB.
        env={**os.environ, "PYTHONPATH": str(ROOT), "BAKEOFF_BOX_MEMORY_GB": "1"},
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "VERDICT rounding PASSED" in out
    assert "VERDICT secret_reader PASSED" in out
    assert "VERDICT parent_killer COMPILE_ERROR" in out
    writer = next(ln for ln in out.splitlines() if ln.startswith("VERDICT verdict_writer"))
    assert writer.split()[2] not in ("PASSED", "HARNESS_ERROR"), writer
    assert "VERDICT clock_forger FLAGGED" in out  # the judge's clock, or its wall-clock blocks


def _processes_running(word: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and word.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def test_the_corpus_lists_each_class():
    classes = {p.stem for p in HOSTILE.glob("*.py")}
    assert classes >= {
        "loopback",
        "pth_writer",
        "secret_reader",
        "task_rewriter",
        "memory_hog",
        "disk_hog",
        "fork_bomb",
        "parent_killer",
    }
