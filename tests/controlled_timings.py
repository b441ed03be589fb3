"""Checks whose timings the test sets: the harness checks every candidate for real (its own
process, the box, fresh inputs, the verdict's statuses and errors), then, on the trusted side,
in the test's own process, the timings of the returned verdict are replaced by figures the
test chose. Which candidate wins a bake-off is then a fact of the test, never of the load on
the machine that runs it.

Nothing here reaches the product or a candidate: `scripts.check.check` is replaced in the
orchestrating process (with `monkeypatch`, or by `python -m tests.controlled_timings`, which
does it before running the `bakeoff` command line), after the candidate's process has ended.

The figures: a candidate whose directory name matches `wins` is timed at the frozen
baseline's median over `WIN` times (1 + the baseline's widest relative spread), so it beats
the bar a winner must clear (1 + its spread + the baseline's, tasks/report/ranking.py) whatever
spread the freeze measured; every other candidate is timed at the baseline's median (1.0x,
never a winner). The baseline timed beside each check is given the frozen median, so no drift
is seen. Every controlled timing has a spread of 1% of its median and keeps its real sample
count.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict
from kernel_bakeoff.tasks.check.standing import baseline_stats

WIN = 3.0
CANDIDATE_SPREAD = 0.01  # relative interquartile range of the controlled candidate timings


def win_speedup(task_dir: Path) -> float:
    """The speedup a matching candidate is given: WIN times over the widest bar possible."""
    _, spreads = baseline_stats(task_dir)
    return WIN * (1 + CANDIDATE_SPREAD + max(spreads.values(), default=0.0))


def _timing(real: Timing, median_ms: float, rel_spread: float) -> Timing:
    n = max(real.sample_count, 1)
    low, high = median_ms * (1 - rel_spread), median_ms * (1 + rel_spread)
    samples = [low + (high - low) * i / max(n - 1, 1) for i in range(n)]
    return real.model_copy(
        update={
            "median_ms": median_ms,
            "min_ms": min(samples),
            "max_ms": max(samples),
            "spread_ms": median_ms * rel_spread,
            "samples_ms": samples,
            "wall_ms_per_call": median_ms,
        }
    )


def controlled(verdict: Verdict, task_dir: Path, speedup: float) -> Verdict:
    """`verdict` with the candidate timed at the frozen median / `speedup` on every timed,
    passed workload, and the baseline beside it at the frozen median."""
    medians, _ = baseline_stats(task_dir)
    workloads = []
    for w in verdict.workloads:
        base = medians.get(w.workload)
        if w.checked_only or w.status is not Status.PASSED or w.timing is None or not base:
            workloads.append(w)
            continue
        update = {
            "timing": _timing(w.timing, base / speedup, CANDIDATE_SPREAD),
            "baseline_ms": base,
            "frozen_baseline_ms": base,
            "speedup": speedup,
            "drift": None,
        }
        if w.baseline_timing is not None:
            update["baseline_timing"] = _timing(w.baseline_timing, base, CANDIDATE_SPREAD)
        workloads.append(w.model_copy(update=update))
    passed = verdict.status is Status.PASSED
    return verdict.model_copy(
        update={"workloads": workloads, "speedup": speedup if passed else verdict.speedup}
    )


def controlling(real_check, wins: str | Callable[[Path, Path], float]):
    """`real_check` (scripts.check.check), with the timings of its verdicts set as above.
    `wins`: a pattern for the candidate directory's name (those win, the rest are 1.0x), or a
    function of (task directory, candidate path) giving the speedup itself."""

    def check(task_dir, candidate, *args, **kwargs):
        verdict = real_check(task_dir, candidate, *args, **kwargs)
        if callable(wins):
            speedup = wins(Path(task_dir), Path(candidate))
        else:
            speedup = win_speedup(task_dir) if re.search(wins, Path(candidate).name) else 1.0
        return controlled(verdict, Path(task_dir), speedup)

    return check


def control_checks(monkeypatch, wins: str | Callable[[Path, Path], float]) -> None:
    """In this process: every check's timings set (see `controlling`). The lanes' checker
    (tasks/check/evaluate.py) binds `check` when it is imported, which may be before this
    test (another test module's import at collection): its name is replaced too, so the
    control never depends on the order modules were imported in."""
    import kernel_bakeoff.scripts.check
    import kernel_bakeoff.tasks.check.evaluate

    controlled_check = controlling(kernel_bakeoff.scripts.check.check, wins)
    monkeypatch.setattr(kernel_bakeoff.scripts.check, "check", controlled_check)
    monkeypatch.setattr(kernel_bakeoff.tasks.check.evaluate, "check", controlled_check)


def main(argv: list[str]) -> int:
    """`python -m tests.controlled_timings WINS ARGS...`: `bakeoff ARGS...` with controlled
    checks (the flow runs in this process's threads, so the replaced function is the one it
    calls)."""
    import kernel_bakeoff.scripts.check
    import kernel_bakeoff.tasks.check.evaluate
    from kernel_bakeoff.flows.cli import main as bakeoff

    wins, *args = argv
    kernel_bakeoff.scripts.check.check = controlling(kernel_bakeoff.scripts.check.check, wins)
    kernel_bakeoff.tasks.check.evaluate.check = (
        kernel_bakeoff.scripts.check.check
    )  # the lanes' checker, as control_checks
    return bakeoff(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
