"""Orchestration-side models: what flows pass between Discover, the lanes and Report."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kernel_bakeoff.scripts.verdict import Verdict

LaneMode = Literal["optimize", "author"]


class CandidateRef(BaseModel):
    """A candidate on disk: a source file or directory in the op's format, plus how it was made."""

    name: str
    language: str
    mode: Literal["optimize", "author", "tuned-env", "baseline"]
    path: str  # file or directory handed to the harness as CANDIDATE
    env: dict[str, str] = Field(default_factory=dict)  # applied in the candidate's process only
    origin: str = ""  # backend, search strategy or role that produced it
    params: dict = Field(default_factory=dict)  # e.g. the Triton config it was built with
    artifacts: list[str] = Field(default_factory=list)  # e.g. a tuned CSV


class CandidateResult(BaseModel):
    candidate: CandidateRef
    verdict: Verdict


class BackendStatus(BaseModel):
    name: str
    language: str
    available: bool
    reason: str = ""


class PlanEntry(BaseModel):
    language: str | None = None  # None: attributed to the input's own language, with a warning
    mode: LaneMode
    reason: str = ""


class DiscoverPlan(BaseModel):
    baseline_ms: dict[str, float]
    best_known_ms: dict[str, float] = Field(default_factory=dict)
    best_backend: str | None = None
    env_candidate: CandidateResult | None = None
    measured: list[CandidateResult] = Field(default_factory=list)
    backends: list[BackendStatus] = Field(default_factory=list)
    plan: list[PlanEntry] = Field(default_factory=list)
    # The reference traced without a model (tasks/backends/trace.py): per timed workload its
    # {"flops", "bytes"}, the op classes matched in it (tasks/backends/match.Match.as_dict), and
    # why nothing (or what else) was matched.
    traced: dict[str, dict] = Field(default_factory=dict)
    matches: list[dict] = Field(default_factory=list)
    match_notes: list[str] = Field(default_factory=list)
