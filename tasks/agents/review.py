"""The reviewer's model conversation (the role is declared in tasks/agents/roles/reviewer.py).

The reviewer is a separate conversation: it sees the record's verdict on the candidate (what the
check function returned, never a claim of the writer's), the candidate's diff against the input
kernel and its profile digest (taken here, from the checked snapshot: `review_digest`), never
the author's reasoning, answer or transcript. The deterministic review
(`tasks.check.judgement.review_candidates`: passed every workload, sound timings) comes first and is a
floor: the model may flag what it accepted, never accept what it flagged, and it reviews only
the candidate the floor chose.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from kernel_bakeoff.tasks.agents.conversation import talk
from kernel_bakeoff.tasks.agents.outputs import ReviewAnswer
from kernel_bakeoff.tasks.agents.profile import digest
from kernel_bakeoff.tasks.agents.prompts import render_prompt
from kernel_bakeoff.tasks.agents.settings import AgentSettings
from kernel_bakeoff.tasks.agents.tools import verdict_text
from kernel_bakeoff.tasks.agents.transcript import Ledger
from kernel_bakeoff.tasks.agents.workspace import candidate_diff
from kernel_bakeoff.tasks.check import judgement
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.models.run import Review

MAX_SOURCE_CHARS = 40000


def sources(path: Path) -> str:
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    parts = []
    for f in files:
        if "__pycache__" in f.parts or f.suffix == ".pyc":
            continue
        name = f.name if f == path else f.relative_to(path).as_posix()
        parts.append(f"--- {name}\n{f.read_text(errors='replace')}")
    return "\n".join(parts)[:MAX_SOURCE_CHARS]


def reviewed_text(task_dir, chosen: CandidateResult) -> str:
    """What the reviewer reads of a candidate: its diff against the input kernel (comments the
    writer left in it included, as part of the code), or its sources without a frozen task."""
    if not task_dir:
        return sources(Path(chosen.candidate.path))
    # here: scripts.freeze brings torch, a second of import this module's callers skip
    from kernel_bakeoff.scripts.freeze import load_task

    spec, _, _ = load_task(Path(task_dir))
    return candidate_diff(Path(task_dir), spec, chosen)[:MAX_SOURCE_CHARS] or "(no change)"


def review_digest(request, chosen: CandidateResult) -> str:
    """The chosen candidate's profile digest on its first timed workload, taken here from the
    snapshot that was checked (the record's copy, never the workspace's), in the box."""
    task_dir = request.inputs.task_dir
    if not task_dir:
        return "none: no frozen task to profile against"
    # here: scripts.freeze brings torch, a second of import this module's callers skip
    from kernel_bakeoff.scripts.freeze import load_task

    spec, _, _ = load_task(Path(task_dir))
    workload = spec.timed_workloads[0].name
    scratch = Path(request.record_dir) / "review-profile"
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "tmp").mkdir(parents=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch)}
    env["TMPDIR"] = str(scratch / "tmp")
    device_env = dict(request.inputs.device_env)
    try:
        return digest(
            Path(task_dir),
            Path(chosen.candidate.path),
            workload,
            env,
            device_env,
            chosen.candidate.name,
        )
    except Exception as exc:  # the review stands on the verdict and the diff without it
        return f"none: profiling failed: {type(exc).__name__}: {exc}"


def review(request) -> Review:
    """Responder of the reviewer role when a model is configured."""
    candidates: list[CandidateResult] = request.inputs.candidates
    floor = judgement.review_candidates(candidates)
    if floor.decision != "accepted":
        return floor
    chosen = next(c for c in candidates if c.candidate.name == floor.candidate)
    settings = AgentSettings.from_env()
    ledger = Ledger(Path(request.record_dir).parent / "transcripts", settings)
    prompt = render_prompt(
        "reviewer",
        {
            **request.context,
            "chosen": chosen.candidate.name,
            "verdict": verdict_text(chosen, "(the flow holds it)"),
            "sources": reviewed_text(request.inputs.task_dir, chosen),
            "profile": review_digest(request, chosen),
        },
    )

    def same_candidate(answer: ReviewAnswer) -> None:
        if answer.candidate != chosen.candidate.name:
            raise ValueError(f"review {chosen.candidate.name!r}, not {answer.candidate!r}")

    answer = talk(
        settings,
        ledger,
        "reviewer",
        prompt=prompt,
        output=ReviewAnswer,
        remaining=request.deadline.remaining,
        accept=same_candidate,
    )
    if answer.decision == "accepted":
        return floor.model_copy(update={"reasons": floor.reasons + answer.reasons})
    return Review(
        candidate=chosen.candidate.name,
        decision="flagged",
        reasons=answer.reasons,
        flagged=floor.flagged | {chosen.candidate.name: answer.reasons},
    )
