"""Responders for the campaign test: the lane writes down the seed it was given, then has the
lean RMSNorm of examples/ checked against the campaign's wasteful one (WASTEFUL, four times
the work; the timings of the checks are the test's, tests/controlled_timings.py, so round 1
finds the lean variant beyond its bar on any load); the reviewer accepts the
fastest that passed (the test is about seeding, not about a quiet CPU)."""

from __future__ import annotations

import json
from pathlib import Path

from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.models.run import Review

from .role_doubles import QUICK, baseline_copies

SEEN = "seed_seen.json"
LEAN = Path(__file__).resolve().parents[1] / "examples" / "rmsnorm_torch" / "kernel.py"
WASTEFUL = """import torch


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    for _ in range(3):  # the same answer, computed three times too many
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        out = x * torch.rsqrt(variance + eps) * weight
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight
"""


def record_seed_then_copies(request):
    Path(request.inputs["workdir"]).mkdir(parents=True, exist_ok=True)
    (Path(request.inputs["workdir"]) / SEEN).write_text(json.dumps(request.inputs.get("seed")))
    return baseline_copies(request, "lean", LEAN.read_text())  # examples/' lean kernel


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
