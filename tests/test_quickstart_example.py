"""The quickstart and its examples: the script runs a bake-off of examples/residual_norm_torch,
the README's first screen names it and the closer example (examples/rmsnorm_torch) with its
command, and the shipped example yields a winner on a CPU: its compiled candidate,
checked through the real harness against the frozen unfused chain, is accepted by the reviewer
and beats the baseline by more than its bar (1 + the measured spreads, tasks/ranking.py), the
rule a bake-off crowns a winner by. A whole bake-off takes minutes on two cores; this checks
the candidate that won the quickstart's runs."""

import pytest

from scripts.check import check
from scripts.freeze import freeze
from tasks.backends import torch_compile
from tasks.backends.base import BuildContext
from tasks.models import CandidateResult
from tasks.ranking import baseline_stats, margin
from tasks.roles_default import review_candidates

from .conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.slow
EXAMPLE = EXAMPLES / "residual_norm_torch"


def test_quickstart_runs_the_example_that_wins_and_the_readme_names_the_closer_one():
    script = (ROOT / "quickstart.sh").read_text()
    assert 'example="${1:-examples/residual_norm_torch}"' in script
    assert "--mode bakeoff" in script
    readme = (ROOT / "README.md").read_text().split("\n## Inputs", 1)[0]
    assert "./quickstart.sh" in readme and "examples/residual_norm_torch" in readme
    assert "./quickstart.sh examples/rmsnorm_torch" in readme  # won by less, or not at all


def test_the_compiled_chain_wins_beyond_its_bar(tmp_path):
    if reason := torch_compile.BACKEND.unavailable_reason():
        pytest.skip(reason)
    task = freeze(EXAMPLE, tmp_path / "task")
    ctx = BuildContext.load(task, tmp_path / "work")
    [ref] = [
        r for r in torch_compile.BACKEND.candidates(ctx) if r.name == "torch-compile-max-autotune"
    ]
    verdict = check(task, ref.path, workdir=tmp_path / "check", cache_dir=tmp_path / "cache")
    assert verdict.status.value == "PASSED", verdict
    result = CandidateResult(candidate=ref, verdict=verdict)
    need = margin(result, baseline_stats(task)[1])
    assert need is not None  # the candidate's spread plus the frozen baseline's (the denominator)
    review = review_candidates([result])
    # A speedup within the spread, or timings the reviewer doubts, is no winner.
    assert review.decision == "accepted", review
    assert verdict.speedup > 1 + need, (verdict.speedup, 1 + need)


def test_the_top_level_help_describes_the_tool():
    from .conftest import run_cli

    shown = run_cli("--help")
    assert shown.returncode == 0, shown.stderr
    description = shown.stdout.split("\n\n", 2)[1]
    assert description.startswith("kernel-bakeoff: freeze a GPU kernel"), shown.stdout
    assert "#" not in description and "TODO" not in description
