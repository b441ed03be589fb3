"""Does the quickstart's example win on this machine? A measurement, moved out of the test suite.

    python -m benchmarks.quickstart_win [--example examples/residual_norm_torch] [--mode NAME]

Freezes the example, builds Discover's torch.compile candidate (`--mode`, default
torch-compile-max-autotune, the candidate that won the quickstart's runs), checks it through
the real harness and applies the rule a bake-off crowns a winner by: the reviewer accepts its
timings (spread within its bound on every workload) and its speedup is beyond its bar (1 + the
measured spreads, tasks/report/ranking.py). On a machine busy with other work the reviewer flags it,
as it is designed to; that is why this is not a test (tests/test_quickstart_example.py checks
the rule on timings it controls). Prints the figures and exits 0 on a win, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from pathlib import Path

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze
from kernel_bakeoff.tasks.backends import torch_compile
from kernel_bakeoff.tasks.backends.base import BuildContext
from kernel_bakeoff.tasks.check.judgement import margin, review_candidates
from kernel_bakeoff.tasks.models.plan import CandidateResult

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", default=str(ROOT / "examples" / "residual_norm_torch"))
    parser.add_argument("--mode", default="torch-compile-max-autotune")
    args = parser.parse_args(argv)
    if reason := torch_compile.BACKEND.unavailable_reason():
        print(f"quickstart_win: {reason}")
        return 1
    with tempfile.TemporaryDirectory(prefix="quickstart-win-") as tmp:
        work = Path(tmp)
        task = freeze(Path(args.example), work / "task")
        refs = torch_compile.BACKEND.candidates(BuildContext.load(task, work / "work"))
        [ref] = [r for r in refs if r.name == args.mode]
        verdict = check(task, Path(ref.path), workdir=work / "check", cache_dir=work / "cache")
        result = CandidateResult(candidate=ref, verdict=verdict)
        need = margin(result, {})
        review = review_candidates([result]) if verdict.passed else None
    print(f"host: {platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")
    print(f"{ref.name}: {verdict.status.value}, speedup {verdict.speedup}")
    if need is not None:
        print(f"bar: {1 + need:.3f}x (1 + the candidate's and the baseline's spreads)")
    if review is not None:
        print(f"reviewer: {review.decision}: {'; '.join(review.reasons)}")
    won = (
        review is not None
        and review.decision == "accepted"
        and need is not None
        and (verdict.speedup or 0) > 1 + need
    )
    print("a winner" if won else "no winner on this machine now")
    return 0 if won else 1


if __name__ == "__main__":
    raise SystemExit(main())
