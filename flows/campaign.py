"""Campaign flow: `rounds` bake-offs of one kernel, each round seeded from the best so far.

    <run dir>/task                 frozen once: every round is timed against the same baseline
    <run dir>/rounds/NN/           one bake-off run directory per round (its task links ../task)
    <run dir>/search-history/      the search's trials, shared: later rounds warm-start from them
    <run dir>/archive.json         the default reference archive (tasks/campaign.py)
    <run dir>/campaign.json, .md   the ledger: per round its seed, best, whether it improved

Each round's lanes get the best variant so far as `seed` (tasks.models.run.LaneConfig.seed: the
variant itself, for model-driven roles, and the shared search history for the search).
Its parameter is a `BakeoffRequest` (tasks/models/request.py), `rounds` its number of rounds
(and the `Opened` run from `bakeoff run`, flows/opening.py). Each round is opened here, on the
campaign's frozen task.
Run as `bakeoff run KERNEL --rounds N`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from kernel_bakeoff.flows.bakeoff import bakeoff
from kernel_bakeoff.flows.freeze import freeze
from kernel_bakeoff.flows.opening import Opened, check_opened, validate
from kernel_bakeoff.flows.prefect_workarounds import subflows_without_heartbeats
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks.apply.hook import apply_and_record
from kernel_bakeoff.tasks.campaign import (
    Ledger,
    RoundEntry,
    archive_for,
    improves,
    note_for,
    round_best,
)
from kernel_bakeoff.tasks.history.records import history_url
from kernel_bakeoff.tasks.models.request import BakeoffRequest
from kernel_bakeoff.tasks.models.run import Report
from kernel_bakeoff.tasks.run.directory import RunStore, default_run_dir
from kernel_bakeoff.tasks.run.key import take_key
from kernel_bakeoff.tasks.run.lock import run_lock
from kernel_bakeoff.tasks.run.settings import enter


def _run_name() -> str:
    request = flow_run.parameters.get("request") or {}
    if isinstance(request, BakeoffRequest):
        request = request.model_dump()
    return f"campaign {request.get('kernel_path', '?')} x{request.get('rounds', 1)}"


@flow(name="campaign", flow_run_name=_run_name)
def campaign(request: BakeoffRequest, opened: Opened | None = None) -> Report:
    """`request.rounds` bake-offs of `request`; the report of the round that found the best
    variant (else the last round's). `opened`: the run `bakeoff run` opened in this process
    (flows/opening.py); without it the campaign opens its run itself."""
    take_key()  # an entry point: nothing this process starts from here inherits the key
    enter()  # the BAKEOFF_* settings, read once for this flow's deep code (tasks/run/settings.py)
    if opened is not None:
        return _campaign(check_opened(opened))
    req = validate(request)
    root = Path(req.run_dir or default_run_dir(Path(req.kernel_path), Path(req.runs_root)))
    with run_lock(root.resolve()):  # one campaign at a time here (tasks/run/lock.py)
        return _campaign(Opened(request=req, run_dir=str(root.resolve())))


def _campaign(opened: Opened) -> Report:
    logger = get_run_logger()
    request, root = opened.request, Path(opened.run_dir)
    kernel_path, rounds = request.kernel_path, request.rounds
    runs_root = request.runs_root
    store = RunStore(root)
    with subflows_without_heartbeats():  # a directory without a spec gets one here
        frozen = opened.frozen or freeze(
            str(Path(kernel_path).resolve()),
            str(store.task_dir),
            request.pool,
            specs_root=str(Path(runs_root).resolve()),
        )
    opened_task = FrozenTask.open(frozen.task_dir, frozen.oracle_sha256)  # a forged id is refused
    task, op, oracle = opened_task.task_dir, opened_task.spec.name, opened_task.oracle_sha256
    arch = json.loads((task / "fingerprint.json").read_text()).get("arch", "cpu")
    archive = archive_for(root)
    ledger = Ledger(op=op, oracle_sha256=oracle, rounds_planned=rounds)
    url = request.history_url or history_url(Path(root).parent)
    reports: list[Report] = []
    for n in range(1, rounds + 1):
        round_dir = root / "rounds" / f"{n:02d}"
        round_dir.mkdir(parents=True, exist_ok=True)
        if not (round_dir / "task").exists():
            os.symlink(os.path.relpath(task, round_dir), round_dir / "task")
        seed = archive.best(op, oracle, arch)
        store.set_phase(f"round {n}/{rounds}", lanes=[])
        logger.info(f"round {n}/{rounds}: seeded from {seed.name if seed else 'the baseline'}")
        seed_info = seed.model_dump(mode="json") if seed else {}
        seed_info["history_dir"] = str(root / "search-history")
        one_round = {"run_dir": str(round_dir), "seed": seed_info, "history_url": url}
        this = request.model_copy(update=one_round | {"rounds": 1, "apply_to_original": False})
        # each round opened here on the campaign's frozen task (its task/ links to it)
        with subflows_without_heartbeats(), run_lock(round_dir):
            rep = bakeoff(this, opened=Opened(request=this, run_dir=str(round_dir), frozen=frozen))
        reports.append(rep)
        entry = RoundEntry(round=n, run_dir=str(round_dir), seed=seed, report=rep.report_path)
        entry.best = round_best(rep, arch, n)
        entry.improved = improves(entry.best, seed)
        entry.winner = rep.winner.name if rep.winner else None
        entry.note = note_for(entry, seed)
        if entry.improved:
            archive.archive(entry.best)
            ledger.best = entry.best
        else:
            ledger.best = seed
        logger.info(f"round {n}: {entry.note}")
        ledger.rounds.append(entry)
        ledger.write(root)
    store.set_phase("done", report=str(root / "campaign.md"))
    improved = [i for i, entry in enumerate(ledger.rounds) if entry.improved]
    final = reports[improved[-1] if improved else -1]
    if request.apply_to_original:
        apply_and_record(final, None, logger)
    return final
