"""Report flow: rank every candidate on the one frozen baseline, write and publish the report.

Writes `report.md` (templates/report.md.j2), `report.json` and `report.html` (the pictures,
tasks/report/html.py) in the run directory, records the run in the history store
(tasks/history/records.py), and publishes four Prefect artifacts: the report as markdown, the
candidate table, a link to the HTML report and a link to the run directory.
"""

from __future__ import annotations

import re
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import (
    create_link_artifact,
    create_markdown_artifact,
    create_table_artifact,
)
from prefect.runtime import flow_run

from kernel_bakeoff.flows.opening import Opened
from kernel_bakeoff.scripts.frozen_task import FrozenTask, spec_and_baseline
from kernel_bakeoff.scripts.isolation import warning
from kernel_bakeoff.tasks.check.standing import baseline_stats
from kernel_bakeoff.tasks.engine.model_room import by_model, model_room
from kernel_bakeoff.tasks.history import records
from kernel_bakeoff.tasks.models.run import DiscoverOutcome, LaneResult, Report, Standing
from kernel_bakeoff.tasks.report import html as report_html
from kernel_bakeoff.tasks.report.baseline_agreement import disagreement
from kernel_bakeoff.tasks.report.ranking import measurement, rank
from kernel_bakeoff.tasks.report.render import render
from kernel_bakeoff.tasks.run.directory import write_json
from kernel_bakeoff.tasks.run.input_identity import Frozen
from kernel_bakeoff.tasks.run.key import take_key
from kernel_bakeoff.tasks.run.settings import enter


def artifact_key(kernel: str, what: str, scope: str = "") -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only. `scope` (the
    deployment, or `cli`) keeps each deployment's history apart."""
    slug = re.sub(r"[^a-z0-9-]+", "-", f"{kernel}-{scope}".lower()).strip("-") or "kernel"
    return f"bakeoff-{slug}-{what}"


def table_rows(report: Report) -> list[dict]:
    rows = []
    for r in report.rows:
        row = {"rank": r.rank, "candidate": r.name, "language": r.language, "mode": r.mode}
        row["from"] = r.origin()
        for name in report.baseline_ms:  # the speedup, then the median it comes from
            row[name] = None if r.speedups.get(name) is None else round(r.speedups[name], 4)
            ms = r.median_ms.get(name)
            row[f"{name} ms"] = None if ms is None else float(f"{ms:.4g}")
        row["overall"] = None if r.speedup is None else round(r.speedup, 4)
        why = "" if r.status is Standing.WINNER else r.detail
        row.update(status=str(r.status), why=why, files=r.path)
        rows.append(row)
    return rows


def publish(result: Report, scope: str = "") -> None:
    """The report, the candidate table and the run directory as artifacts of the current run."""
    kernel, mode, run_dir = result.kernel, result.mode, result.run_dir
    markdown = Path(result.report_path).read_text()
    what = f"{kernel} {mode}"
    create_markdown_artifact(markdown, key=artifact_key(kernel, "report", scope), description=what)
    create_table_artifact(
        table_rows(result), key=artifact_key(kernel, "candidates", scope), description=what
    )
    if result.html_path and Path(result.html_path).is_file():
        create_link_artifact(
            Path(result.html_path).resolve().as_uri(),
            link_text="report.html",
            key=artifact_key(kernel, "report-html", scope),
            description="the report in pictures: speedups, roofline, lane timeline (no network)",
        )
    create_link_artifact(
        Path(run_dir).resolve().as_uri(),
        link_text=str(run_dir),
        key=artifact_key(kernel, "run-dir", scope),
        description="every candidate, verdict, timing and log of this run",
    )


def oracle_warnings(task: FrozenTask | Path) -> list[str]:
    """The freeze's word on an oracle that does not discriminate (scripts/oracle_probe.py): the
    first warning of every report (report.md, report.html, --json, the terminal)."""

    spec, _ = spec_and_baseline(task)
    return [spec.degenerate.message] if spec.degenerate else []


def with_box_warning(warnings: list[str] | None) -> list[str]:
    """The run's warnings, the loud line first where untrusted code ran out of its box on
    purpose (BAKEOFF_ISOLATION=none): report.md, report.html and the terminal say it, not only
    the checks' logs."""

    listed = list(warnings or [])
    unsafe = warning()
    return [unsafe, *listed] if unsafe and unsafe not in listed else listed


def prose_for(result: Report, agents, say) -> tuple[str, list[str]]:
    """(prose, dropped sentences) from the reporter where a model (or a drop-in) answers it;
    ("", []), said in one line, where none does (the model's room not loaded)."""
    if not by_model("reporter", agents):
        say("reporter: no model configured; the report has no prose")
        return "", []
    return model_room("report_prose")(result, agents, say)


def _run_name() -> str:
    run, frozen = flow_run.parameters.get("run") or {}, flow_run.parameters.get("frozen") or {}
    mode = run.request.mode if isinstance(run, Opened) else (run.get("request") or {}).get("mode")
    return f"report {frozen.op if isinstance(frozen, Frozen) else frozen.get('op', '?')} {mode}"


@flow(name="report", flow_run_name=_run_name)
def report(
    run: Opened,
    frozen: Frozen,
    lanes: list[LaneResult],
    discovered: DiscoverOutcome | None = None,
    warnings: list[str] | None = None,
    publish_artifacts: bool = True,
) -> Report:
    """The opened `run`'s report over its lanes (and Discover's outcome), ranked on `frozen`."""
    take_key()  # an entry point: nothing this process starts from here inherits the key
    enter()  # the BAKEOFF_* settings, read once for this flow's deep code (tasks/run/settings.py)
    req, run_dir, task_dir = run.request, run.run_dir, frozen.task_dir
    # absolute (flows/opening.py validate): `bakeoff apply` finds its repository by it
    kernel_path, kernel, mode = req.kernel_path, frozen.op, req.mode
    history_url, agents = req.history_url, req.agents
    logger = get_run_logger()
    # opened once, as the oracle the run froze: a forged or re-frozen task is refused here
    task = FrozenTask.open(task_dir, frozen.oracle_sha256)
    rows, winner = rank(lanes, discovered, task)
    medians, _ = baseline_stats(task)
    result = Report(
        kernel_path=kernel_path,
        kernel=kernel,
        mode=mode,
        run_dir=run_dir,
        task_dir=task_dir,
        oracle_sha256=task.oracle_sha256,
        baseline_ms=medians,
        rows=rows,
        winner=winner,
        lanes=lanes,
        warnings=with_box_warning(oracle_warnings(task) + (warnings or [])),
        report_path=str(Path(run_dir) / "report.md"),
        html_path=str(Path(run_dir) / "report.html"),
        measurement=measurement(task) | {"baseline_disagrees": disagreement(rows, task)},
    )
    try:
        prose, dropped = prose_for(result, agents, logger.info)
    except Exception as exc:  # the report stands without its prose; say so
        logger.warning(f"no prose: the reporter failed: {type(exc).__name__}: {exc}")
        prose, dropped = "", []
    result = result.model_copy(update={"prose": prose, "prose_dropped": dropped})
    markdown = render(
        "report.md.j2", report=result, **report_html.discover_context(result, discovered, task=task)
    )
    Path(result.report_path).write_text(markdown)
    write_json(Path(run_dir) / "report.json", result)
    report_html.write(result, discovered, task)
    url = history_url or records.history_url(Path(run_dir).parent)
    try:
        records.record_report(result, discovered, url, task)
    except Exception as exc:  # the report stands without its history row; say so
        logger.warning(f"not recorded in the history store: {type(exc).__name__}: {exc}")
    if publish_artifacts:
        publish(result)
    if winner:
        logger.info(f"winner {winner.name} ({winner.language} {winner.mode}) {winner.speedup:.3f}x")
    else:
        logger.info("no candidate beat the frozen baseline: the original kernel is kept")
    return result
