"""`bakeoff history KERNEL [--json]`: past results of a kernel, newest first."""

from __future__ import annotations

import json
from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.history import records


def kernel_name(kernel: str) -> str:
    """An op name as it is, or the op name of a kernel path."""
    if Path(kernel).exists():
        from kernel_bakeoff.scripts.untrusted import load_spec  # it imports the kernel: in the box

        return load_spec(Path(kernel))[0].name
    return kernel


def summary(run: records.RunOut) -> dict:
    accepted = run.accepted
    return {
        "id": run.id,
        "kernel": run.kernel,
        "kind": run.kind,
        "mode": run.mode,
        "recorded_at": run.recorded_at.isoformat(),
        "host": run.host,
        "device": run.device,
        "arch": run.arch,
        "oracle_sha256": run.oracle_sha256,
        "winner": run.winner,
        "winner_speedup": run.winner_speedup,
        "accepted": accepted.model_dump() if accepted else None,
        "baseline": run.baseline.model_dump() if run.baseline else None,
        "candidates": len([c for c in run.candidates if c.source != records.FROZEN]),
        "lanes": run.lanes,
        "environment": run.environment,
        "run_dir": run.run_dir,
    }


def _shown_url(url: str) -> str:
    """The URL as the user may see it: its password hidden."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def _runs(url: str, name: str) -> list:
    """The kernel's runs, or BadInput naming the database when it cannot be read at all (not a
    URL, a driver this install lacks, no such server or file)."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        return records.runs(url, name)
    except (SQLAlchemyError, ImportError, ValueError, OSError) as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        why = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        raise BadInput(_shown_url(url), f"cannot read the history database ({why})") from exc


def show(kernel: str, runs_root: str, db: str | None, as_json: bool) -> int:
    url = db or records.history_url(runs_root)
    name = kernel_name(kernel)
    found = _runs(url, name)
    if as_json:
        print(json.dumps([summary(r) for r in found], indent=1))
        return 0
    if not found:
        print(f"no recorded runs of {name} in {url}")
        return 0
    print(f"{len(found)} run(s) of {name} in {url}, newest first")
    print(f"{'recorded (UTC)':<20} {'kind':<8} {'mode':<9} {'arch':<7} {'winner':<32} run dir")
    for r in found:
        won = f"{r.winner} {r.winner_speedup:.3f}x" if r.winner else "none: original kept"
        when = r.recorded_at.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{when:<20} {r.kind:<8} {r.mode:<9} {r.arch:<7} {won:<32} {r.run_dir}")
    return 0
