"""Campaigns: the seeds' closed loop, rounds of the same lanes, each seeded from the best variant
so far. This module is plain Python (no Prefect): the variant, the interface to the reference
archive, the default archive, and the ledger.

The reference archive interface (`ReferenceArchive`) is two calls:

    best(op, oracle_sha256, arch) -> Variant | None   the best variant so far of this oracle
    archive(variant)                                  keep a round's best with its lessons

The default (`LedgerArchive`) keeps the variants in the campaign's run directory
(`archive.json`). Another archive (the knowledge/ reference archive) plugs in through
`BAKEOFF_REFERENCE_ARCHIVE=module:callable`, the callable taking the campaign directory and
returning an object with those two methods.

A round's best is its fastest candidate that passed every workload and was neither flagged nor
from a failed lane nor the input re-measured. It improves on the best so far only when its
speedup beats that one's by more than its own measured spread; a round that does not improve
says so in the ledger, and the best so far stays the seed.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field

from kernel_bakeoff.tasks.models.run import Report, Standing
from kernel_bakeoff.tasks.report.html import results_by_row
from kernel_bakeoff.tasks.run.directory import write_json
from kernel_bakeoff.tasks.run.settings import current

ELIGIBLE = {Standing.WINNER, Standing.ELIGIBLE, Standing.WITHIN_SPREAD, Standing.PASSED}


class Variant(BaseModel):
    op: str
    oracle_sha256: str
    arch: str
    name: str
    language: str
    mode: str
    path: str
    speedup: float
    margin: float | None = None
    params: dict = Field(default_factory=dict)
    env: dict = Field(default_factory=dict)
    round: int | None = None
    run_dir: str = ""
    lessons: list[str] = Field(default_factory=list)


class ReferenceArchive(Protocol):
    def best(self, op: str, oracle_sha256: str, arch: str) -> Variant | None: ...

    def archive(self, variant: Variant) -> None: ...


class LedgerArchive:
    """Variants kept in `<campaign dir>/archive.json`; the best is the fastest."""

    def __init__(self, campaign_dir: Path):
        self.path = Path(campaign_dir) / "archive.json"

    def _load(self) -> list[Variant]:
        if not self.path.is_file():
            return []
        return [Variant.model_validate(v) for v in json.loads(self.path.read_text())]

    def best(self, op: str, oracle_sha256: str, arch: str) -> Variant | None:
        same = [
            v for v in self._load() if (v.op, v.oracle_sha256, v.arch) == (op, oracle_sha256, arch)
        ]
        return max(same, key=lambda v: v.speedup, default=None)

    def archive(self, variant: Variant) -> None:
        write_json(self.path, [v.model_dump(mode="json") for v in [*self._load(), variant]])


def archive_for(campaign_dir: Path) -> ReferenceArchive:
    spec = current().reference_archive  # module:callable, checked there
    if spec is None:
        return LedgerArchive(campaign_dir)
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)(Path(campaign_dir))


def round_best(report: Report, arch: str, round_no: int) -> Variant | None:
    """The fastest candidate of a round that counts as a variant, with its lessons."""

    results = results_by_row(report, None)
    rows = [r for r in report.rows if r.status in ELIGIBLE and r.speedup is not None]
    if not rows:
        return None
    row = max(rows, key=lambda r: r.speedup)
    found = results.get((row.source, row.name))
    lane = next((lane for lane in report.lanes if lane.key == row.source), None)
    lessons = [f"{row.status}: {row.detail}" if row.detail else row.status]
    if lane is not None and lane.review is not None:
        lessons += [f"reviewer {lane.review.decision}: {r}" for r in lane.review.reasons]
    return Variant(
        op=report.kernel,
        oracle_sha256=report.oracle_sha256,
        arch=arch,
        name=row.name,
        language=row.language,
        mode=row.mode,
        path=row.path,
        speedup=row.speedup,
        margin=row.margin,
        params=found.candidate.params if found else {},
        env=found.candidate.env if found else {},
        round=round_no,
        run_dir=report.run_dir,
        lessons=lessons,
    )


def improves(new: Variant | None, best: Variant | None) -> bool:
    if new is None:
        return False
    if best is None:
        return True
    return new.speedup > best.speedup * (1 + (new.margin or 0.0))


class RoundEntry(BaseModel):
    round: int
    run_dir: str
    seed: Variant | None = None
    best: Variant | None = None
    improved: bool = False
    note: str = ""
    winner: str | None = None
    report: str = ""


class Ledger(BaseModel):
    op: str
    oracle_sha256: str
    rounds_planned: int
    rounds: list[RoundEntry] = Field(default_factory=list)
    best: Variant | None = None

    def write(self, campaign_dir: Path) -> Path:
        path = Path(campaign_dir) / "campaign.json"
        write_json(path, self)
        lines = [f"# Campaign: {self.op}, {len(self.rounds)} of {self.rounds_planned} rounds", ""]
        lines += ["| round | seeded from | best of the round | speedup | improved | note |"]
        lines += ["| --- | --- | --- | --- | --- | --- |"]
        for r in self.rounds:
            seed = f"round {r.seed.round}: {r.seed.name}" if r.seed else "the frozen baseline"
            best = r.best.name if r.best else "-"
            speed = f"{r.best.speedup:.3f}x" if r.best else "-"
            lines.append(
                f"| {r.round} | {seed} | {best} | {speed} | {'yes' if r.improved else 'no'} "
                f"| {r.note} |"
            )
        if self.best:
            lines += ["", f"Best so far: {self.best.name} (round {self.best.round}) "]
            lines[-1] += f"{self.best.speedup:.3f}x, `{self.best.path}`"
        (Path(campaign_dir) / "campaign.md").write_text("\n".join(lines) + "\n")
        return path


def note_for(entry: RoundEntry, best_before: Variant | None) -> str:
    new = entry.best
    if new is None:
        return "no candidate passed and counted as a variant: this round did not improve"
    if entry.improved:
        if best_before is None:
            return f"first best: {new.name} {new.speedup:.3f}x"
        return (
            f"improved: {new.speedup:.3f}x beats round {best_before.round}'s "
            f"{best_before.speedup:.3f}x by more than the spread"
        )
    return (
        f"did not improve: {new.speedup:.3f}x does not beat the best so far "
        f"({best_before.speedup:.3f}x, round {best_before.round}) by more than its spread"
    )
