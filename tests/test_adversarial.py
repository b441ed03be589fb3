"""The candidate corpus (tests/corpus/): every adversarial candidate refused, every honest one passed."""

import json
import os
import re
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze, measure_baseline
from kernel_bakeoff.scripts.verdict import Status

from .conftest import ROOT

CORPUS = ROOT / "tests" / "corpus"
SMALL = {"samples": 5, "warmup": 2, "trials": 2}
SECRETS = {
    "BAKEOFF_TEST_API_KEY": "bakeoff-fake-secret-api-key-0001",
    "ANTHROPIC_API_KEY": "bakeoff-fake-secret-anthropic-0002",
    "PREFECT_API_URL": "bakeoff-fake-secret-prefect-url-0003",
    "GITHUB_TOKEN": "bakeoff-fake-secret-github-0004",
}
# Checked by their own tests: one edits the harness it runs under (so it runs from a copy),
# the other the task it is checked on (whose later checks must then be refused).
RUN_ELSEWHERE = {"edit_harness", "edit_oracle"}


def corpus(kind: str) -> list[Path]:
    return sorted(p for p in (CORPUS / kind).glob("*.py"))


def expected(path: Path) -> set[str]:
    match = re.search(r"^expect: (\S+)$", path.read_text(), re.MULTILINE)
    assert match, f"{path.name} names no expected status"
    return set(match.group(1).split("|"))


def holders(path: Path) -> list[int]:
    """Live processes of this host holding `path` open."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            links = [os.readlink(fd) for fd in (proc / "fd").iterdir()]
        except OSError:
            continue
        if str(path) in links and alive(int(proc.name)):
            found.append(int(proc.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and " Z " not in Path(f"/proc/{pid}/stat").read_text()


@pytest.fixture(scope="session")
def frozen_small(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "task"
    return freeze(CORPUS / "rmsnorm_op", out, measure=partial(measure_baseline, **SMALL))


@pytest.fixture
def task(frozen_small, tmp_path) -> Path:
    """A private copy of the frozen task: some candidates damage the one they are checked on."""
    return Path(shutil.copytree(frozen_small, tmp_path / "task"))


def assert_no_secret(verdict) -> None:
    text = verdict.model_dump_json()
    for value in SECRETS.values():
        assert value not in text and value[::-1] not in text


def test_every_class_of_the_trust_contract_has_a_candidate():
    classes = {
        m.group(1).split(" / ")[0]
        for p in corpus("adversarial") + corpus("gpu")
        if (m := re.search(r"class: ([^.]+)\.", p.read_text()))
    }
    wanted = {
        "memoising on pointers",
        "memoising on shapes",
        "memoising on values",
        "reusing memory that held the reference answer",
        "partial writes",
        "mutating inputs",
        "deferred or lazy outputs",
        "work on a stream the timer does not see",
        "patched timers",
        "patched harness functions",
        "threads that finish after the timed region (CPU's unseen stream)",
        "processes that finish after the timed region",
        "detecting which call is checked",
        "precision below the op's contract",
        "editing the oracle",
        "editing the harness",
        "editing the harness's result files",
        "reading the oracle or the harness's files for an answer",
        "exiting early with a clean status",
        "reading credentials",
        "finding the reference's outputs in memory",
        "precomputed outputs embedded for the frozen inputs",
    }
    assert wanted <= classes, sorted(wanted - classes)


@pytest.mark.parametrize(
    "path",
    [p for p in corpus("adversarial") if p.stem not in RUN_ELSEWHERE],
    ids=lambda p: p.stem,
)
def test_adversarial_candidate_is_refused(path, task, tmp_path, monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    verdict = check(task, path, candidate_env={"CORPUS_OUT": str(evidence)}, **SMALL)
    assert verdict.status is not Status.PASSED
    assert verdict.status.value in expected(path), verdict.reason
    assert verdict.reason
    assert_no_secret(verdict)
    pidfile = evidence / "daemon.pid"
    if pidfile.exists():  # its pid is its namespace's: look for the file it holds open
        assert not holders(evidence / "daemon.alive"), (
            "a process the candidate left outlived the check"
        )


@pytest.mark.parametrize("path", corpus("honest"), ids=lambda p: p.stem)
def test_honest_candidate_passes(path, task):
    verdict = check(task, path, **SMALL)
    assert verdict.status is Status.PASSED, verdict.reason
    assert verdict.sizes_checked  # right at the sizes freeze added, too
    assert all(w.speedup and w.speedup > 0 for w in verdict.workloads if not w.checked_only)
    assert all(w.max_rel_error <= w.tolerance for w in verdict.workloads)


def test_the_oracle_cannot_be_rewritten_from_the_box(task):
    """The frozen task is read-only in the check's box (scripts/box.py): the rewrite fails at
    import, the task is as frozen, and later checks run against it unchanged."""
    from kernel_bakeoff.scripts import manifest

    before = manifest.verify(task)
    first = check(task, CORPUS / "adversarial" / "edit_oracle.py", **SMALL)
    assert first.status is not Status.PASSED and first.status.value in expected(
        CORPUS / "adversarial" / "edit_oracle.py"
    ), first.reason
    assert "Read-only file system" in first.output_tail or "ermission" in first.output_tail
    assert manifest.verify(task) == before
    assert check(task, CORPUS / "honest" / "rounding.py", **SMALL).status is Status.PASSED


HARNESS_DRIVER = """
import sys
from pathlib import Path
from kernel_bakeoff.scripts.check import check
verdict = check(Path(sys.argv[1]), Path(sys.argv[2]), samples=5, warmup=2, trials=2)
print(verdict.model_dump_json())
try:
    check(Path(sys.argv[1]), Path(sys.argv[3]), samples=5, warmup=2, trials=2)
    print("second check ran")
except BadInput as exc:
    print("second check refused:", exc)
"""


def test_the_harness_cannot_be_edited_from_the_box(task, tmp_path):
    harness = tmp_path / "harness"
    for package in ("kernel_bakeoff", "scripts"):  # the import name, and the harness under it
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / package, harness / package, ignore=ignore)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            HARNESS_DRIVER,
            str(task),
            str(CORPUS / "adversarial" / "edit_harness.py"),
            str(CORPUS / "honest" / "rounding.py"),
        ],
        cwd=harness,
        env={**env, "PYTHONPATH": str(harness)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.strip().splitlines()[-2:]
    verdict = json.loads(first)
    # The harness is read-only in the box: the edit fails at import, nothing changed, so the
    # next check runs (were it changed, it would be FLAGGED and the next check refused).
    assert verdict["status"] == "COMPILE_ERROR", verdict["reason"]
    assert "Read-only file system" in verdict["output_tail"] + (verdict["reason"] or "")
    assert second == "second check ran"
    for name in ("verdict.py",):
        copy = (harness / "scripts" / name).read_text()
        assert copy == (ROOT / "scripts" / name).read_text()
    assert "every candidate passes" not in (ROOT / "scripts" / "verdict.py").read_text()


CREDENTIALS_DRIVER = """
import sys
from pathlib import Path
from kernel_bakeoff.scripts.check import check
print(check(Path(sys.argv[1]), Path(sys.argv[2]), samples=5, warmup=2, trials=2).model_dump_json())
"""


def test_secrets_in_the_orchestrators_own_environment_stay_out_of_reach(task):
    """The secrets sit in the initial environment of the process that calls check(), where
    /proc/PID/environ shows them; the candidate must find them neither there nor in its own."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CREDENTIALS_DRIVER,
            str(task),
            str(CORPUS / "adversarial" / "read_credentials.py"),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **SECRETS},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout.strip().splitlines()[-1])
    assert verdict["status"] == "INCORRECT_NUMERICAL", verdict["reason"]
    for value in SECRETS.values():
        assert value not in done.stdout and value[::-1] not in done.stdout
