"""Campaign flow: `rounds` bake-offs of one kernel, each round seeded from the best so far.

    <run dir>/task                 frozen once: every round is timed against the same baseline
    <run dir>/rounds/NN/           one bake-off run directory per round (its task links ../task)
    <run dir>/search-history/      the search's trials, shared: later rounds warm-start from them
    <run dir>/archive.json         the default reference archive (tasks/campaign.py)
    <run dir>/campaign.json, .md   the ledger: per round its seed, best, whether it improved

Each round's lanes get the best variant so far as `seed` (tasks.results.LaneConfig.seed: the
variant itself, for model-driven roles, and the shared search history for the search).
Run as `bakeoff run KERNEL --rounds N`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from prefect import flow, get_run_logger

from flows.bakeoff import bakeoff
from flows.freeze import freeze
from flows.prefect_workarounds import subflows_without_heartbeats
from scripts import manifest
from tasks.apply.hook import apply_and_record
from tasks.campaign import Ledger, RoundEntry, archive_for, improves, note_for, round_best
from tasks.results import PoolConfig, Report
from tasks.run_store import RunStore, default_run_dir
from tasks.store.history import history_url


@flow(name="campaign", flow_run_name="campaign {kernel_path} x{rounds}")
def campaign(
    kernel_path: str,
    rounds: int = 2,
    run_dir: str | None = None,
    apply_to_original: bool = False,
    **params,
) -> Report:
    """The report of the round that found the best variant (else the last round's)."""
    logger = get_run_logger()
    runs_root = params.get("runs_root", "runs")
    root = Path(run_dir or default_run_dir(Path(kernel_path), Path(runs_root))).resolve()
    store = RunStore(root)
    pool = PoolConfig(
        gpu_ids=params.get("gpu_ids"),
        gpu_mode=params.get("gpu_mode", "pool"),
        cpu_slots=params.get("cpu_slots"),
    )
    with subflows_without_heartbeats():  # a directory without a spec gets one here
        frozen = freeze(
            str(Path(kernel_path).resolve()),
            str(store.task_dir),
            pool,
            specs_root=str(Path(runs_root).resolve()),
        )
    task = Path(frozen.task_dir)
    spec = json.loads((task / "spec.json").read_text())
    arch = json.loads((task / "fingerprint.json").read_text()).get("arch", "cpu")
    oracle = manifest.verify(task)  # re-derived: a forged id is refused
    archive = archive_for(root)
    ledger = Ledger(op=spec["name"], oracle_sha256=oracle, rounds_planned=rounds)
    url = params.pop("history_url", None) or history_url(Path(root).parent)
    reports: list[Report] = []
    for n in range(1, rounds + 1):
        round_dir = root / "rounds" / f"{n:02d}"
        round_dir.mkdir(parents=True, exist_ok=True)
        if not (round_dir / "task").exists():
            os.symlink(os.path.relpath(task, round_dir), round_dir / "task")
        seed = archive.best(spec["name"], oracle, arch)
        store.set_phase(f"round {n}/{rounds}", lanes=[])
        logger.info(f"round {n}/{rounds}: seeded from {seed.name if seed else 'the baseline'}")
        seed_info = seed.model_dump(mode="json") if seed else {}
        seed_info["history_dir"] = str(root / "search-history")
        with subflows_without_heartbeats():
            rep = bakeoff(
                kernel_path,
                run_dir=str(round_dir),
                seed=seed_info,
                history_url=url,
                **params,
            )
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
    if apply_to_original:
        apply_and_record(final, None, logger)
    return final
