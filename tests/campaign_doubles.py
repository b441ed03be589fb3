"""Responders for the campaign test: the lane writes down the seed it was given, then has
copies of the frozen baseline checked; the reviewer accepts the fastest that passed (the
test is about seeding, not about a quiet CPU)."""

from __future__ import annotations

import json
from pathlib import Path

from scripts.verdict import Status
from tasks.results import Review

from .role_doubles import QUICK, baseline_copies

SEEN = "seed_seen.json"


def record_seed_then_copies(request):
    Path(request.inputs["workdir"]).mkdir(parents=True, exist_ok=True)
    (Path(request.inputs["workdir"]) / SEEN).write_text(json.dumps(request.inputs.get("seed")))
    return baseline_copies(request)


def accept_fastest(request) -> Review:
    passed = [c for c in request.inputs["candidates"] if c.verdict.status is Status.PASSED]
    if not passed:
        return Review(candidate=None, decision="nothing-to-review", reasons=["none passed"])
    best = max(passed, key=lambda c: c.verdict.speedup or 0.0)
    return Review(candidate=best.candidate.name, decision="accepted", reasons=["fastest"])


CAMPAIGN = {
    **QUICK,
    "optimizer": "tests.campaign_doubles:record_seed_then_copies",
    "reviewer": "tests.campaign_doubles:accept_fastest",
}
