"""The quickstart and its examples: the script runs a bake-off of examples/residual_norm_torch
(and of any example the README passes it, with the user's extra arguments), and the shipped
example's compiled candidate, checked through the real harness against the frozen unfused chain,
is judged by the rule a bake-off crowns a winner by: accepted by the reviewer and beyond its bar
(1 + the measured spreads, tasks/report/ranking.py).

Whether it wins on this machine's clock is a measurement, not a test: a busy machine makes the
reviewer flag it, as it is designed to. `python -m benchmarks.quickstart_win` measures it; here
the real verdict's timings are replaced by ones the test controls (a quiet machine's, then a
busy one's), so the verdict on the rule never depends on the load."""

import os
import re
import shutil
import stat
import subprocess

import pytest

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.backends import torch_compile
from kernel_bakeoff.tasks.backends.base import BuildContext
from kernel_bakeoff.tasks.check.judgement import margin, review_candidates
from kernel_bakeoff.tasks.check.standing import baseline_stats
from kernel_bakeoff.tasks.models.plan import CandidateResult

from .conftest import EXAMPLES, ROOT

EXAMPLE = EXAMPLES / "residual_norm_torch"

# Stands in for the installed `bakeoff` inside a copy of quickstart.sh's directory: records the
# arguments it was run with, so the script's behaviour is observed without a whole bake-off.
RECORDER = '#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$(dirname "$0")/../../argv.txt"\n'


@pytest.fixture
def quickstart(tmp_path):
    """quickstart.sh in a directory of its own: an empty setup step and a recording `bakeoff`."""
    shutil.copy(ROOT / "quickstart.sh", tmp_path / "quickstart.sh")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "setup_env.sh").write_text("exit 0\n")
    bakeoff = tmp_path / ".venv" / "bin" / "bakeoff"
    bakeoff.parent.mkdir(parents=True)
    bakeoff.write_text(RECORDER)
    bakeoff.chmod(bakeoff.stat().st_mode | stat.S_IXUSR)

    def run(*args: str, path: str | None = None) -> tuple[subprocess.CompletedProcess, list]:
        env = {**os.environ, "PATH": path or os.environ["PATH"]}
        done = subprocess.run(
            ["bash", str(tmp_path / "quickstart.sh"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        argv = tmp_path / "argv.txt"
        return done, argv.read_text().splitlines() if argv.exists() else []

    return run


def test_quickstart_runs_a_bakeoff_of_the_winning_example_and_passes_arguments_on(quickstart):
    done, argv = quickstart()
    assert done.returncode == 0, done.stderr
    assert argv == ["run", "examples/residual_norm_torch", "--mode", "bakeoff"]
    assert (EXAMPLES / "residual_norm_torch" / "op.toml").is_file()
    done, argv = quickstart("examples/rmsnorm_torch", "--budget", "2")
    assert argv == ["run", "examples/rmsnorm_torch", "--mode", "bakeoff", "--budget", "2"]


def test_the_readmes_quickstart_commands_run_the_examples_they_name(quickstart):
    """Every `./quickstart.sh ...` the README shows runs a bake-off of a shipped example."""
    readme = (ROOT / "README.md").read_text()
    commands = set(re.findall(r"\./quickstart\.sh((?:\s+[\w/.-]+)*)", readme))
    named = {c.split()[0] for c in commands if c.strip()}
    assert "" in commands and "examples/rmsnorm_torch" in named  # the default and the closer one
    for example in named:
        done, argv = quickstart(example)
        assert done.returncode == 0, done.stderr
        assert argv[:2] == ["run", example] and (ROOT / example / "op.toml").is_file(), example


def test_without_a_cxx_compiler_the_quickstart_says_nothing_can_win(quickstart, tmp_path):
    bare = tmp_path / "bin"  # bash and what the script calls, no compiler
    bare.mkdir()
    for tool in ("bash", "dirname", "printf"):
        if found := shutil.which(tool):
            (bare / tool).symlink_to(found)
    done, argv = quickstart(path=str(bare))
    assert "no C++ compiler" in done.stderr and "nothing will" in done.stderr
    assert argv[:2] == ["run", "examples/residual_norm_torch"]  # it still runs, and says why


def controlled(result: CandidateResult, candidate_ms: float, spread: float) -> CandidateResult:
    """The real verdict with timings the test sets: the frozen chain beside it at 3 ms with a 5%
    spread; the candidate at `candidate_ms` with `spread` (relative) on every workload."""
    workloads = []
    for w in result.verdict.workloads:
        if w.checked_only:
            workloads.append(w)
            continue
        base = w.baseline_timing.model_copy(update={"median_ms": 3.0, "spread_ms": 0.15})
        timing = w.timing.model_copy(
            update={"median_ms": candidate_ms, "spread_ms": candidate_ms * spread}
        )
        workloads.append(
            w.model_copy(
                update={
                    "timing": timing,
                    "baseline_timing": base,
                    "baseline_ms": 3.0,
                    "speedup": 3.0 / candidate_ms,
                    "drift": None,  # the machine's load during the real check is not the subject
                }
            )
        )
    verdict = result.verdict.model_copy(
        update={"workloads": workloads, "speedup": 3.0 / candidate_ms}
    )
    return CandidateResult(candidate=result.candidate, verdict=verdict)


@pytest.mark.slow
def test_the_compiled_chain_is_judged_a_winner_by_its_bar_on_a_quiet_machine_only(tmp_path):
    if reason := torch_compile.BACKEND.unavailable_reason():
        pytest.skip(reason)
    task = freeze(EXAMPLE, tmp_path / "task")
    ctx = BuildContext.load(task, tmp_path / "work")
    [ref] = [
        r for r in torch_compile.BACKEND.candidates(ctx) if r.name == "torch-compile-max-autotune"
    ]
    verdict = check(
        task, ref.path, samples=5, workdir=tmp_path / "check", cache_dir=tmp_path / "cache"
    )
    assert verdict.status is Status.PASSED, verdict
    real = CandidateResult(candidate=ref, verdict=verdict)
    # the bar: the candidate's spread plus the frozen baseline's (the one denominator)
    assert margin(real, baseline_stats(task)[1]) is not None
    assert all(w.timing.sample_count >= 5 for w in verdict.workloads if not w.checked_only)

    frozen_spread = {w.workload: 0.05 for w in verdict.workloads if not w.checked_only}
    quiet = controlled(real, candidate_ms=1.0, spread=0.05)  # 3x, spreads of 5% each
    need = margin(quiet, frozen_spread)
    assert need == pytest.approx(0.10)
    review = review_candidates([quiet])
    assert review.decision == "accepted", review
    assert quiet.verdict.speedup > 1 + need, (quiet.verdict.speedup, 1 + need)

    # A speedup within the spread, or timings the reviewer doubts, is no winner.
    busy = controlled(real, candidate_ms=1.0, spread=1.0)  # the spread of the busy run
    review = review_candidates([busy])
    assert review.decision == "flagged" and "busy or unstable device" in review.reasons[0]
    close = controlled(real, candidate_ms=2.85, spread=0.05)  # 1.05x: faster, within its bar
    assert review_candidates([close]).decision == "accepted"
    assert close.verdict.speedup < 1 + margin(close, frozen_spread)


def test_the_top_level_help_describes_the_tool():
    from .conftest import run_cli

    shown = run_cli("--help")
    assert shown.returncode == 0, shown.stderr
    description = shown.stdout.split("\n\n", 2)[1]
    assert description.startswith("kernel-bakeoff: freeze a GPU kernel"), shown.stdout
    assert "#" not in description and "TODO" not in description
