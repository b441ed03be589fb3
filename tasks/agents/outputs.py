"""The output model of every model-driven role: the schema of its `submit` tool.

Numbers a model reports (a speedup, a status) are claims: they count only with a receipt that
the flow matches to a verdict on disk (`Workspace.verify`); otherwise they are ignored.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kernel_bakeoff.scripts.spec import InputSpec, OpKind, Workload


class Claim(BaseModel):
    candidate: str = Field(description="the candidate's name as given to `check`")
    receipt: str = Field(description="the receipt `check` returned for it")
    speedup: float | None = Field(None, description="the speedup the verdict reported")


class RoundAnswer(BaseModel):
    """kernel_author and kernel_optimizer: what this round tried, and its best candidate."""

    summary: str = Field(description="what you tried this round and what the verdicts said")
    best: Claim | None = Field(None, description="your best checked candidate, with its receipt")
    lessons: list[str] = Field(default_factory=list, description="what held, what did not")
    next_idea: str = Field("", description="the most promising next change, if any")


class ReviewAnswer(BaseModel):
    """reviewer: may this candidate compete for the win?"""

    candidate: str
    decision: Literal["accepted", "flagged"]
    reasons: list[str] = Field(min_length=1)


class AuthorPlan(BaseModel):
    """op_benchmarker: which languages to author in, and why, from Discover's measured table."""

    languages: list[str] = Field(description="target languages for author lanes, best bet first")
    reasons: list[str] = Field(default_factory=list)


class SpecDraft(BaseModel):
    """oracle_freezer: the op spec of a kernel directory that has none (written as op.toml)."""

    name: str
    kind: OpKind = OpKind.other
    language: str
    entry: str = Field(description="'file.py:function', the function under test")
    reference: str | None = Field(None, description="'file.py:function' if not the entry")
    inputs: list[InputSpec] = Field(min_length=1)
    workloads: list[Workload] = Field(min_length=1)
    tolerance: dict[str, float] = Field(default_factory=dict)
    flops: str | None = None


class ReportProse(BaseModel):
    """reporter: the report's prose, from the ranked table (numbers quoted from it only)."""

    summary: str
    caveats: list[str] = Field(default_factory=list)


class LearnedCard(BaseModel):
    """update_experience: one distilled card for a measured win (ratios come from the verdict)."""

    title: str
    identity: str = Field(description="what the winning variant is, in one line")
    delta: str = Field(description="what changed against the input")
    lessons: list[str] = Field(min_length=1)
    pitfalls: list[str] = Field(default_factory=list)
    dead_ends: list[str] = Field(default_factory=list)
    open_directions: list[str] = Field(default_factory=list)
