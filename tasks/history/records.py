"""Writing bake-offs and re-timings into the history store, and reading a kernel's past.

Where: `BAKEOFF_HISTORY_URL` when set (service mode: a PostgreSQL URL, e.g. the database of the
Prefect server; Prefect's `postgresql+asyncpg://` form is accepted), else a SQLite file
`history.sqlite` in the runs root (the parent of the run directory). One transaction per run,
so a reader sees a run with all its candidates or not at all.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.scripts.verdict import Verdict
from kernel_bakeoff.tasks.history.schema import CandidateRowDB, RunRow, TimingRow, engine_for
from kernel_bakeoff.tasks.models.run import DiscoverOutcome, Report, Standing
from kernel_bakeoff.tasks.report.html import results_by_row
from kernel_bakeoff.tasks.run.directory import code_version
from kernel_bakeoff.tasks.run.settings import current

FILE_NAME = "history.sqlite"
ENV_KEPT = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
FROZEN = "frozen"  # source of the frozen baseline's row


def history_url(runs_root: Path | str | None = None) -> str:
    if (given := current().history_url) is not None:
        return given.get_secret_value()
    root = Path(runs_root or "runs").resolve()
    root.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{root / FILE_NAME}"


class TimingOut(BaseModel):
    workload: str
    status: str
    clock: str | None = None
    median_ms: float | None = None
    spread_ms: float | None = None
    sample_count: int | None = None
    baseline_ms: float | None = None
    baseline_spread_ms: float | None = None  # the baseline timed beside it in the same check
    speedup: float | None = None


class CandidateOut(BaseModel):
    name: str
    language: str
    mode: str
    source: str
    status: str
    verdict: str
    detail: str = ""
    accepted: bool = False
    speedup: float | None = None
    margin: float | None = None
    path: str = ""
    params: dict = Field(default_factory=dict)
    env: dict = Field(default_factory=dict)
    timings: list[TimingOut] = Field(default_factory=list)


class RunOut(BaseModel):
    id: str
    kernel: str
    kind: str
    mode: str
    kernel_path: str
    run_dir: str
    task_dir: str
    oracle_sha256: str
    recorded_at: datetime
    host: str
    device: str
    arch: str
    code_version: str
    winner: str | None = None
    winner_speedup: float | None = None
    fingerprint: dict = Field(default_factory=dict)
    environment: dict = Field(default_factory=dict)
    lanes: list = Field(default_factory=list)
    candidates: list[CandidateOut] = Field(default_factory=list)

    def candidate(self, source: str, name: str | None = None) -> CandidateOut | None:
        return next(
            (c for c in self.candidates if c.source == source and name in (None, c.name)), None
        )

    @property
    def accepted(self) -> CandidateOut | None:
        return next((c for c in self.candidates if c.accepted), None)

    @property
    def baseline(self) -> CandidateOut | None:
        return self.candidate(FROZEN)


def timings_of(verdict: Verdict) -> list[TimingOut]:
    return [
        TimingOut(
            workload=w.workload,
            status=w.status.value,
            clock=w.timing.clock if w.timing else None,
            median_ms=w.timing.median_ms if w.timing else None,
            spread_ms=w.timing.spread_ms if w.timing else None,
            sample_count=w.timing.sample_count if w.timing else None,
            baseline_ms=w.baseline_ms,
            baseline_spread_ms=w.baseline_timing.spread_ms if w.baseline_timing else None,
            speedup=w.speedup,
        )
        for w in verdict.workloads
    ]


def baseline_candidate(task: FrozenTask) -> CandidateOut:
    """The frozen baseline's measurement (baseline.json) as a candidate row."""
    spec, data = task.spec, task.baseline
    timings = [
        TimingOut(
            workload=name,
            status=w.status.value,
            clock=w.clock or None,
            median_ms=w.median_ms,
            spread_ms=w.spread_ms,
            sample_count=w.sample_count or None,
            baseline_ms=w.median_ms,
            speedup=1.0,
        )
        for name, w in data.workloads.items()
    ]
    return CandidateOut(
        name="frozen baseline",
        language=spec.language,
        mode="baseline",
        source=FROZEN,
        status="frozen-baseline",
        verdict="PASSED",
        speedup=1.0,
        path=str(task.baseline_src),
        timings=timings,
    )


def _environment(fingerprint: dict) -> dict:
    env = {k: os.environ[k] for k in ENV_KEPT if k in os.environ}
    keys = ("torch", "triton", "python", "driver", "cuda", "hip")
    return {"versions": {k: fingerprint.get(k) for k in keys}, "env": env}


def _lanes(report: Report) -> list[dict]:
    return [
        {
            "key": lane.key,
            "language": lane.language,
            "mode": lane.mode,
            "status": lane.status,
            "reason": lane.reason,
            "reused": lane.reused,
            "device": lane.lease.device if lane.lease else None,
            "host": lane.lease.host if lane.lease else None,
            "start": lane.lease.start.isoformat() if lane.lease else None,
            "end": lane.lease.end.isoformat() if lane.lease and lane.lease.end else None,
        }
        for lane in report.lanes
    ]


def run_from_report(
    report: Report, discovered: DiscoverOutcome | None = None, task: FrozenTask | None = None
) -> RunOut:
    """The history's record of a finished report, on its frozen task (opened here, verified to
    be the report's oracle, when the caller has not)."""
    task = task or report.frozen_task()
    fingerprint = task.fingerprint
    results = results_by_row(report, discovered)
    candidates = [baseline_candidate(task)]
    for row in report.rows:
        found = results.get((row.source, row.name))
        candidates.append(
            CandidateOut(
                name=row.name,
                language=row.language,
                mode=row.mode,
                source=row.source,
                status=str(row.status),
                verdict=found.verdict.status.value if found else str(row.status),
                detail=row.detail,
                accepted=row.status is Standing.WINNER,
                speedup=row.speedup,
                margin=row.margin,
                path=row.path,
                params=found.candidate.params if found else {},
                env=found.candidate.env if found else {},
                timings=timings_of(found.verdict) if found else [],
            )
        )
    return RunOut(
        id=str(uuid.uuid4()),
        kernel=report.kernel,
        kind="bakeoff",
        mode=report.mode,
        kernel_path=report.kernel_path,
        run_dir=report.run_dir,
        task_dir=report.task_dir,
        oracle_sha256=report.oracle_sha256,
        recorded_at=datetime.now(UTC),
        host=current().host,
        device=str(fingerprint.get("device_name") or fingerprint.get("device")),
        arch=str(fingerprint.get("arch")),
        code_version=code_version(),
        winner=report.winner.name if report.winner else None,
        winner_speedup=report.winner.speedup if report.winner else None,
        fingerprint=fingerprint,
        environment=_environment(fingerprint),
        lanes=_lanes(report),
        candidates=candidates,
    )


def record(run: RunOut, url: str) -> str:
    """Write one run with its candidates and timings in one transaction; returns its id."""
    row = RunRow(**run.model_dump(exclude={"candidates"}))
    for c in run.candidates:
        cand = CandidateRowDB(**c.model_dump(exclude={"timings"}))
        cand.timings = [TimingRow(**t.model_dump()) for t in c.timings]
        row.candidates.append(cand)
    with Session(engine_for(url)) as session, session.begin():
        session.add(row)
    return run.id


def record_report(
    report: Report, discovered: DiscoverOutcome | None, url: str, task: FrozenTask | None = None
) -> str:
    return record(run_from_report(report, discovered, task), url)


def _out(row: RunRow) -> RunOut:
    data = {c: getattr(row, c) for c in RunOut.model_fields if c != "candidates"}
    if data["recorded_at"].tzinfo is None:  # SQLite keeps no zone; everything here is UTC
        data["recorded_at"] = data["recorded_at"].replace(tzinfo=UTC)
    cands = []
    for c in row.candidates:
        fields = {k: getattr(c, k) for k in CandidateOut.model_fields if k != "timings"}
        timings = [
            TimingOut(**{k: getattr(t, k) for k in TimingOut.model_fields}) for t in c.timings
        ]
        cands.append(CandidateOut(**fields, timings=timings))
    return RunOut(**data, candidates=cands)


def runs(url: str, kernel: str | None = None, kind: str | None = None) -> list[RunOut]:
    """Recorded runs, newest first (of one kernel and kind when named)."""
    query = select(RunRow).options(
        selectinload(RunRow.candidates).selectinload(CandidateRowDB.timings)
    )
    if kernel is not None:
        query = query.where(RunRow.kernel == kernel)
    if kind is not None:
        query = query.where(RunRow.kind == kind)
    query = query.order_by(RunRow.recorded_at.desc(), RunRow.id)
    with Session(engine_for(url)) as session:
        return [_out(r) for r in session.scalars(query)]


def last_accepted(url: str, kernel: str) -> RunOut | None:
    """The newest run of `kernel` (bake-off or re-timing) with an accepted result."""
    return next((r for r in runs(url, kernel) if r.accepted is not None), None)
