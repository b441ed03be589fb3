"""Asking the reviewer (a model's, or a drop-in) about the best candidates: the engine's
`judge` (tasks/engine/proposers.py) reaches it through the model's door, for a lane and for
Discover alike."""

from __future__ import annotations

from pathlib import Path

from kernel_bakeoff.tasks.agents import ask
from kernel_bakeoff.tasks.check.standing import MIN_SAMPLES, max_relative_spread


def _summary(results) -> list[dict]:
    rows = []
    for r in results:
        spreads = [
            w.timing.spread_ms / w.timing.median_ms
            for w in r.verdict.workloads
            if w.timing and w.timing.median_ms > 0
        ]
        rows.append(
            {
                "name": r.candidate.name,
                "status": r.verdict.status.value,
                "speedup": r.verdict.speedup,
                "spread": max(spreads, default=None),
            }
        )
    return sorted(rows, key=lambda c: -(c["speedup"] or 0.0))


def review(
    candidates,
    subject: str,
    record_dir: Path,
    agents,
    timeout_s=None,
    retries=None,
    task_dir=None,
    device_env=None,
):
    """The reviewer's decision; `task_dir` (the frozen task) lets a model reviewer read each
    candidate as its diff against the input, and `device_env` (the lane's device) profile it."""
    return ask(
        "reviewer",
        inputs={"candidates": candidates, "task_dir": task_dir, "device_env": device_env or {}},
        context={
            "subject": subject,
            "candidates": _summary(candidates),
            "max_spread": max_relative_spread(),
            "min_samples": MIN_SAMPLES,
        },
        record_dir=record_dir,
        agents=agents,
        timeout_s=timeout_s,
        retries=retries,
    )
