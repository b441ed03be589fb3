"""Applying from a flow (`apply_to_original`, `bakeoff run --apply`): never raises; the result
goes to `<run dir>/apply.json` and the flow's log."""

from __future__ import annotations

from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.apply.command import describe
from kernel_bakeoff.tasks.apply.winner import ApplyResult, apply_winner
from kernel_bakeoff.tasks.models.run import DiscoverOutcome, Report
from kernel_bakeoff.tasks.run.directory import write_json

RESULT = "apply.json"


def apply_and_record(report: Report, discovered: DiscoverOutcome | None, logger) -> ApplyResult:

    try:
        done = apply_winner(report, discovered)
    except BadInput as exc:
        done = ApplyResult(status="refused", reason=str(exc))
    except Exception as exc:  # the bake-off's result stands; the apply's failure is recorded
        done = ApplyResult(status="refused", reason=f"{type(exc).__name__}: {exc}")
    write_json(Path(report.run_dir) / RESULT, done)
    (logger.info if done.status == "committed" else logger.warning)(describe(done))
    return done
