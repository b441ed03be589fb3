"""What `bakeoff run` prints when the run is done: the ranking table (each workload's speedup
over the frozen baseline above the candidate's own median, and why beside every row but the
winner), a line for each lane that did not complete, and the winner's line with its files."""

from __future__ import annotations

from rich.table import Table

from kernel_bakeoff.tasks.models.run import Report, Standing

# Rows whose status needs no words: a winner is explained below the table.
SELF_EXPLAINED = (Standing.WINNER,)
REASON_CHARS = 90


def short(reason: str, limit: int = REASON_CHARS) -> str:
    """The first line of a reason, cut to `limit` characters: the report has it whole."""
    line = reason.strip().splitlines()[0] if reason.strip() else ""
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


def ranking_table(report: Report) -> Table:
    """Each workload's column holds the speedup over the frozen baseline (its median in the
    header) above the candidate's own median: divide the two and get the speedup."""
    table = Table(
        title=f"{report.kernel} ({report.mode}): speedup over the frozen baseline",
        caption="speedup = frozen baseline ms / candidate ms; the report has every reason whole",
    )
    for col in ("#", "candidate", "language", "mode", "from"):
        table.add_column(col)
    for name, ms in report.baseline_ms.items():
        table.add_column(f"{name}\nfrozen {ms:.4g} ms", justify="right")
    table.add_column("overall", justify="right")
    table.add_column("status")
    table.add_column("why", overflow="fold", max_width=48)
    for r in report.rows:
        cells = [str(r.rank), r.name, r.language, r.mode, r.origin()]
        for n in report.baseline_ms:
            x, ms = r.speedups.get(n), r.median_ms.get(n)
            cells.append(
                ("-" if x is None else f"{x:.3f}x") + ("" if ms is None else f"\n{ms:.4g} ms")
            )
        why = "" if r.status in SELF_EXPLAINED else short(r.detail)
        cells += ["-" if r.speedup is None else f"{r.speedup:.3f}x", str(r.status), why]
        table.add_row(*cells, style="bold green" if r.status is Standing.WINNER else None)
    return table


def lane_lines(report: Report) -> list[str]:
    """A line for each lane that did not complete (skipped, cut, failed), with its reason."""
    return [
        f"lane {lane.key} ({lane.language} {lane.mode}): {lane.status}"
        + (f": {short(lane.reason)}" if lane.reason else "")
        for lane in report.lanes
        if lane.status != "completed"
    ]


def winner_line(report: Report) -> str:
    w = report.winner
    return (
        f"winner: {w.name} ({w.language}, {w.mode}) {w.speedup:.3f}x over the frozen baseline\n"
        f"winner's files: {w.path}"
    )
