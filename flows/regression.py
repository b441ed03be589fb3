"""Nightly regression: the bake-off over every kernel of a suite file, summarised in one artifact.

A suite (deployments/suites/nightly.toml) lists kernel paths with optional per-kernel mode,
budget and backends. Each night gets its own run directories (runs_root/<date>/), so every
kernel is frozen and measured afresh; one kernel failing never stops the others.

Run as `python -m flows.regression [SUITE]`; deployed as regression/nightly on a cron schedule.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import tomllib
from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from flows.bakeoff import bakeoff, subflows_without_heartbeats
from scripts.errors import BadInput
from tasks.render import render

ROOT = Path(__file__).resolve().parent.parent
KERNEL_KEYS = {"path", "mode", "budget", "backends", "target_language"}


def load_suite(suite: Path) -> list[dict]:
    """Kernels of a suite file with the defaults applied; BadInput for a malformed file."""
    suite = Path(suite)
    if not suite.is_file():
        raise BadInput(str(suite), "suite file does not exist")
    try:
        data = tomllib.loads(suite.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(str(suite), f"not valid TOML: {exc}") from None
    defaults = data.get("defaults", {})
    kernels = []
    for i, entry in enumerate(data.get("kernels", [])):
        unknown = set(entry) - KERNEL_KEYS
        if "path" not in entry or unknown:
            what = f"unknown keys {sorted(unknown)}" if unknown else "needs a path"
            raise BadInput(f"{suite} kernels[{i}]", what)
        merged = {**defaults, **entry}
        path = Path(merged.pop("path"))
        merged["kernel_path"] = str(path if path.is_absolute() else ROOT / path)
        kernels.append(merged)
    if not kernels:
        raise BadInput(str(suite), "lists no [[kernels]]")
    return kernels


@flow(name="regression", flow_run_name="nightly {suite}")
def regression(
    suite: str = "deployments/suites/nightly.toml",
    runs_root: str = "runs/nightly",
    gpu_ids: list[str] | None = None,
    gpu_mode: str = "pool",
    agents: dict[str, str] | None = None,
    artifact_key: str = "nightly-bakeoff",
) -> list[dict]:
    logger = get_run_logger()
    suite_path = Path(suite) if Path(suite).is_absolute() else ROOT / suite
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    night = Path(runs_root) / date
    rows = []
    for entry in load_suite(suite_path):
        name = Path(entry["kernel_path"]).name
        row = {"kernel": name, "mode": entry.get("mode", "optimize"), "status": "completed"}
        row.update(reason="", winner=None, speedup=None, lanes="", report="")
        try:
            with subflows_without_heartbeats():
                rep = bakeoff(
                    **entry,
                    runs_root=str(night),
                    gpu_ids=gpu_ids,
                    gpu_mode=gpu_mode,
                    agents=agents,
                    fresh=True,
                )
        except Exception as exc:
            row.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
            logger.error(f"{name}: {row['reason']}")
        else:
            done = sum(lane.status == "completed" for lane in rep.lanes)
            cut = sum(lane.status == "cut" for lane in rep.lanes)
            said = f"{done}/{len(rep.lanes)} completed" + (f", {cut} cut by time" if cut else "")
            row.update(lanes=said, report=rep.report_path)
            if rep.winner:
                row.update(winner=f"{rep.winner.name} ({rep.winner.language})")
                row.update(speedup=rep.winner.speedup)
        rows.append(row)
    markdown = render("regression.md.j2", suite=suite, date=date, rows=rows, runs_root=night)
    night.mkdir(parents=True, exist_ok=True)
    (night / "summary.md").write_text(markdown)
    create_markdown_artifact(markdown, key=artifact_key, description=f"nightly bake-off {date}")
    return rows


if __name__ == "__main__":
    for line in regression(*sys.argv[1:2]):
        print(line)
