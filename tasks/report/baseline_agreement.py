"""Whether the input, re-timed by Discover as the `baseline` row, agrees with the frozen figure.

The frozen median divides every speedup; Discover checks the input kernel as a candidate, so
the same code is timed again later in the run, in a check of its own. On a quiet machine the
two agree within their spreads. Where they do not, every speedup of the run may be off by as
much (a frozen 1.065 ms against 0.90-1.01 ms timed later inflated a run's speedups by ~12%,
issue #40), so the report says it first: above the winner, in report.md, report.html, the
terminal and `--json` (`measurement.baseline_disagrees`).
"""

from __future__ import annotations

from pathlib import Path

from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks.check.standing import baseline_stats
from kernel_bakeoff.tasks.models.run import CandidateRow


def disagreement(rows: list[CandidateRow], task: FrozenTask | Path) -> str | None:
    """One line naming the workloads where the `baseline` row's median and the frozen median
    differ by more than both relative spreads (the frozen one's and the row's), else None."""
    row = next((r for r in rows if r.mode == "baseline"), None)
    if row is None:
        return None
    try:
        medians, spreads = baseline_stats(task)
    except (OSError, ValueError, KeyError):
        return None
    own = row.spread or 0.0
    apart = []
    for name, frozen in medians.items():
        again = row.median_ms.get(name)
        if not again or frozen <= 0:
            continue
        off = again / frozen - 1
        if abs(off) > spreads.get(name, 0.0) + own:
            word = "slower" if off > 0 else "faster"
            apart.append(
                f"{name} {again:.4g} ms, {abs(off):.0%} {word} than the frozen {frozen:.4g} ms "
                f"(spreads {spreads.get(name, 0.0):.0%} frozen, {own:.0%} re-timed)"
            )
    if not apart:
        return None
    return (
        "the frozen baseline and the input re-timed by Discover (the `baseline` row) disagree "
        f"beyond both spreads: {'; '.join(apart)}; every speedup divides by the frozen figure, "
        "so each may be off by as much: re-freeze on a quiet machine"
    )
