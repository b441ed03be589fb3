"""Nightly regression: re-time each kernel's frozen baseline and last accepted winner, compare
with the history, fail the flow run on any regression (so Prefect's automations notify).

A suite (deployments/suites/nightly.toml) lists kernel paths with optional per-kernel mode,
budget, backends and `full_bakeoff`. For every kernel the flow takes, from the history store
(tasks/history/), the last run with an accepted result; re-times that run's frozen baseline and
its accepted winner on a leased device, against the same frozen task; and compares tonight's
times with the accepted ones by the noise-aware rule of tasks/history/trend.py. The re-timing is
recorded in the history (kind "retime"; accepted again only when it did not regress). With
`full_bakeoff` (for the suite or a kernel) a fresh bake-off runs too, in runs_root/<date>/.
One kernel failing never stops the others. The summary (markdown, with each kernel's trend)
goes to runs_root/<date>/summary.md and to an artifact; the flow run ends Failed when any
kernel regressed.

Run as `python -m kernel_bakeoff.flows.regression [SUITE]`; deployed as regression/nightly on a cron schedule.
"""

from __future__ import annotations

import json
import sys
import tomllib
import uuid
from datetime import UTC, datetime
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NONE
from prefect.states import Completed, Failed

from kernel_bakeoff.flows.bakeoff import bakeoff
from kernel_bakeoff.flows.prefect_workarounds import outlive_worker, subflows_without_heartbeats
from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.verdict import Verdict
from kernel_bakeoff.tasks.check.gpu_pool import DevicePool
from kernel_bakeoff.tasks.history import records
from kernel_bakeoff.tasks.history.trend import compare, trend
from kernel_bakeoff.tasks.models.request import BakeoffRequest
from kernel_bakeoff.tasks.models.run import PoolConfig
from kernel_bakeoff.tasks.report.render import render
from kernel_bakeoff.tasks.run.directory import write_json
from kernel_bakeoff.tasks.run.key import take_key
from kernel_bakeoff.tasks.run.settings import enter

ROOT = Path(__file__).resolve().parent.parent
KERNEL_KEYS = {"path", "mode", "budget", "backends", "target_language", "full_bakeoff"}


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


@task(name="retime", cache_policy=NONE)
def retime(task_dir: str, path: str, env: dict, pool: PoolConfig, samples: int | None) -> Verdict:
    """Check and time one result again against its frozen task, on a leased device."""

    with DevicePool.from_config(pool).lease(f"retime {Path(path).name}") as lease:
        return check(
            Path(task_dir), Path(path), candidate_env=env, device_env=lease.env, samples=samples
        )


def _kernel_name(kernel_path: str) -> str:
    from kernel_bakeoff.scripts.untrusted import load_spec  # it imports the kernel: in the box

    return load_spec(Path(kernel_path))[0].name


def _record_retime(url: str, last: records.RunOut, base: Verdict, won: Verdict, ok: bool) -> None:
    run = last.model_copy(deep=True)
    run.id, run.kind, run.recorded_at = str(uuid.uuid4()), "retime", datetime.now(UTC)
    baseline, accepted = run.baseline, run.accepted
    baseline.timings = records.timings_of(base)
    accepted.timings = records.timings_of(won)
    accepted.accepted = ok
    accepted.status = "winner" if ok else "regressed"
    run.candidates = [baseline, accepted]
    run.winner = accepted.name if ok else None
    run.winner_speedup = won.speedup if ok else None
    records.record(run, url)


def _row(kernel: str, status: str) -> dict:
    return dict(
        kernel=kernel,
        status=status,
        regressed=False,
        reason="",
        winner=None,
        since=None,
        run_dir=None,
        changes=[],
        baseline_changes=[],
        baseline_slowed=False,
        trend=[],
    )


def check_kernel(name: str, url: str, pool: PoolConfig, samples: int | None) -> dict:
    """Tonight's comparison for one kernel, as a summary row."""
    row = _row(name, "no-history")
    last = records.last_accepted(url, name)
    if last is None:
        row["reason"] = "no accepted result recorded yet: nothing to compare"
        return row
    winner, frozen = last.accepted, last.baseline
    base = retime(last.task_dir, frozen.path, {}, pool, samples)
    won = retime(last.task_dir, winner.path, winner.env, pool, samples)
    changes = compare(winner, won)
    base_changes = compare(frozen, base, beside=False)
    regressed = any(c.regressed for c in changes)
    _record_retime(url, last, base, won, not regressed)
    row.update(
        status="regression" if regressed else "ok",
        regressed=regressed,
        winner=winner.name,
        since=last.recorded_at.isoformat(),
        run_dir=last.run_dir,
        changes=[c.model_dump() for c in changes],
        baseline_changes=[c.model_dump() for c in base_changes],
        baseline_slowed=any(c.regressed for c in base_changes),
        trend=trend(name, records.runs(url, name)).points,
        reason="; ".join(f"{c.workload}: {c.reason}" for c in changes if c.regressed),
    )
    return row


@flow(name="regression", flow_run_name="nightly {suite}")
def regression(
    suite: str = "deployments/suites/nightly.toml",
    runs_root: str = "runs/nightly",
    gpu_ids: list[str] | None = None,
    gpu_mode: str = "pool",
    agents: dict[str, str] | None = None,
    artifact_key: str = "nightly-bakeoff",
    full_bakeoff: bool = False,
    history_url: str | None = None,
    samples: int | None = None,
):
    take_key()  # an entry point: nothing this process starts from here inherits the key
    enter()  # the BAKEOFF_* settings, read once for this flow's deep code (tasks/run/settings.py)
    outlive_worker()  # its worker may die before it
    logger = get_run_logger()
    suite_path = Path(suite) if Path(suite).is_absolute() else ROOT / suite
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    night = Path(runs_root) / date
    url = history_url or records.history_url(Path(runs_root))
    pool = PoolConfig(gpu_ids=gpu_ids, gpu_mode=gpu_mode)
    rows = []
    for entry in load_suite(suite_path):
        full = entry.pop("full_bakeoff", full_bakeoff)
        label = Path(entry["kernel_path"]).name
        try:
            row = check_kernel(_kernel_name(entry["kernel_path"]), url, pool, samples)
        except Exception as exc:
            row = _row(label, "failed")
            row["reason"] = f"{type(exc).__name__}: {exc}"
            logger.error(f"{label}: {row['reason']}")
        row.update(path=label, mode=entry.get("mode", "optimize"), bakeoff=None)
        if full:
            row["bakeoff"] = _bakeoff(entry, night, gpu_ids, gpu_mode, agents, url, logger)
        rows.append(row)
    regressed = [r["kernel"] for r in rows if r["regressed"]]
    markdown = render("regression.md.j2", suite=suite, date=date, rows=rows, runs_root=night)
    night.mkdir(parents=True, exist_ok=True)
    (night / "summary.md").write_text(markdown)
    write_json(night / "summary.json", rows)
    create_markdown_artifact(markdown, key=artifact_key, description=f"nightly regression {date}")
    if regressed:
        return Failed(message=f"regression in {', '.join(regressed)}; see {night / 'summary.md'}")
    return Completed(message=f"{len(rows)} kernel(s), no regression", data=rows)


def _bakeoff(entry: dict, night: Path, gpu_ids, gpu_mode, agents, url, logger) -> dict:
    """A fresh bake-off of one kernel tonight (recorded in the history by its report)."""
    out = {"status": "completed", "reason": "", "winner": None, "speedup": None, "lanes": ""}
    try:
        with subflows_without_heartbeats():
            tonight = {"runs_root": str(night), "fresh": True, "history_url": url}
            host = {"gpu_ids": gpu_ids, "gpu_mode": gpu_mode, "agents": agents or {}}
            rep = bakeoff(BakeoffRequest(**entry, **tonight, **host))
    except Exception as exc:
        out.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
        logger.error(f"{entry['kernel_path']}: {out['reason']}")
        return out
    done = sum(lane.status == "completed" for lane in rep.lanes)
    cut = sum(lane.status == "cut" for lane in rep.lanes)
    said = f"{done}/{len(rep.lanes)} completed" + (f", {cut} cut by time" if cut else "")
    out.update(lanes=said, report=rep.report_path)
    if rep.winner:
        out.update(winner=f"{rep.winner.name} ({rep.winner.language})", speedup=rep.winner.speedup)
    return out


if __name__ == "__main__":
    state = regression(*sys.argv[1:2], return_state=True)
    print(state.message)
    print(json.dumps(state.result(raise_on_failure=False), indent=1, default=str))
