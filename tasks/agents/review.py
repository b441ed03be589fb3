"""The reviewer's model conversation, and update_experience after a measured win.

The reviewer is a separate conversation: it sees the record's verdict on the candidate (what the
check function returned, never a claim of the writer's), the candidate's diff against the input
kernel and its profile where one exists, never the author's reasoning, answer or transcript. The deterministic review
(`roles_default.review_candidates`: passed every workload, sound timings) comes first and is a
floor: the model may flag what it accepted, never accept what it flagged, and it reviews only
the candidate the floor chose. update_experience writes one learned card when the lane's
accepted candidate beat the baseline by more than the measured spread, and none otherwise.
"""

from __future__ import annotations

from pathlib import Path

from tasks.agents.knowledge import learned_dir, write_card
from tasks.agents.loop import SYSTEM, arch_of, drive
from tasks.agents.outputs import LearnedCard, ReviewAnswer
from tasks.agents.profile import which_profiler
from tasks.agents.settings import AgentSettings, model_configured
from tasks.agents.tools import verdict_text
from tasks.agents.transcript import Ledger
from tasks.models import CandidateResult
from tasks.results import Review
from tasks.roles_default import review_candidates

MAX_SOURCE_CHARS = 40000


class NoTools:
    def schemas(self) -> list[dict]:
        return []

    def call(self, name: str, arguments: dict) -> tuple[str, bool]:
        return f"unknown tool {name!r}", True


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
    from scripts.freeze import load_task
    from tasks.agents.workspace import candidate_diff

    spec, _, _ = load_task(Path(task_dir))
    return candidate_diff(Path(task_dir), spec, chosen)[:MAX_SOURCE_CHARS] or "(no change)"


def review(request) -> Review:
    """Responder of the reviewer role when a model is configured."""
    from tasks.agents.wrapper import render_prompt

    candidates: list[CandidateResult] = request.inputs["candidates"]
    floor = review_candidates(candidates)
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
            "sources": reviewed_text(request.inputs.get("task_dir"), chosen),
            "profile": which_profiler()[1] or "not taken for the review",
        },
    )

    def same_candidate(answer: ReviewAnswer) -> None:
        if answer.candidate != chosen.candidate.name:
            raise ValueError(f"review {chosen.candidate.name!r}, not {answer.candidate!r}")

    transcript = ledger.open("reviewer")
    try:
        answer = drive(
            settings,
            transcript=transcript,
            system=SYSTEM,
            prompt=prompt,
            tools=NoTools(),
            output=ReviewAnswer,
            remaining=request.deadline.remaining,
            accept=same_candidate,
        )
    except Exception as exc:
        transcript.close(f"failed: {exc}")
        raise
    transcript.close("answered")
    if answer.decision == "accepted":
        return floor.model_copy(update={"reasons": floor.reasons + answer.reasons})
    return Review(
        candidate=chosen.candidate.name,
        decision="flagged",
        reasons=answer.reasons,
        flagged=floor.flagged | {chosen.candidate.name: answer.reasons},
    )


def measured_win(lane, task_dir: Path) -> CandidateResult | None:
    """The lane's accepted candidate if it beat the baseline by more than the measured spread."""
    from tasks.ranking import baseline_stats, margin

    review_ = lane.review
    if review_ is None or review_.decision != "accepted":
        return None
    chosen = next((c for c in lane.candidates if c.candidate.name == review_.candidate), None)
    if chosen is None or chosen.verdict.speedup is None:
        return None
    m = margin(chosen, baseline_stats(task_dir)[1])
    return chosen if m is not None and chosen.verdict.speedup > 1 + m else None


def curate_bakeoff(lanes, task_dir: Path, say) -> Path | None:
    """bakeoff mode: one learned card for the whole bake-off, however many model lanes won.

    The card distils the best measured win of the bake-off's model-driven lanes (the lanes
    that hold receipts); the other lanes' wins are named in update_experience's prompt, so one
    curated update carries what the bake-off learned."""
    wins = []
    for lane in lanes:
        lane_dir = Path(lane.lane_dir or "")
        if lane.reused or not (lane_dir / "receipts.json").is_file():
            continue  # a search lane, or one curated by the run that ran it
        win = measured_win(lane, Path(task_dir))
        if win is not None:
            wins.append((win.verdict.speedup, lane, win))
    if not model_configured():
        return None
    if not wins:
        say("no learned card: no model lane of the bake-off won beyond the measured spread")
        return None
    wins.sort(key=lambda w: w[0], reverse=True)
    _, best, _ = wins[0]
    others = [
        {"lane": lane.key, "candidate": win.candidate.name, "overall": speedup}
        for speedup, lane, win in wins[1:]
    ]
    try:
        return update_experience(best, Path(task_dir), Path(best.lane_dir), say, others)
    except Exception as exc:  # the bake-off stands without its card
        say(f"no learned card: {type(exc).__name__}: {exc}")
        return None


def update_experience(
    lane, task_dir: Path, lane_dir: Path, say, others: list[dict] | None = None
) -> Path | None:
    """One learned card for a measured win of a model-driven lane; None (and why) otherwise.
    `others`: the other winning lanes of the same bake-off (curate_bakeoff)."""
    from scripts.freeze import load_task
    from tasks.agents.workspace import Workspace
    from tasks.agents.wrapper import render_prompt

    if not model_configured() or not (lane_dir / "receipts.json").is_file():
        return None
    win = measured_win(lane, task_dir)
    if win is None:
        say("no learned card: the lane has no accepted candidate beyond the measured spread")
        return None
    spec, _, _ = load_task(task_dir)
    ws = Workspace(lane_dir / "work", lane_dir, task_dir, spec, win.verdict.oracle_sha256)
    receipt = next(
        (r["receipt"] for r in ws.receipts() if r["candidate"] == win.candidate.name), None
    )
    held = ws.verify(receipt, win.candidate.name) if receipt else None
    if held is None:
        say(f"no learned card: {win.candidate.name} has no matching receipt")
        return None
    if held.verdict != win.verdict:  # the lane's result and the record disagree: the record wins
        say(f"no learned card: {win.candidate.name}'s verdict is not the one its receipt holds")
        return None
    settings = AgentSettings.from_env()
    ledger = Ledger(lane_dir / "transcripts", settings)
    ratios = {w.workload: w.speedup for w in win.verdict.workloads}
    prompt = render_prompt(
        "update_experience",
        {
            "op": spec.name,
            "language": win.candidate.language,
            "arch": arch_of(task_dir),
            "candidate": win.candidate.name,
            "ratios": ratios,
            "overall": win.verdict.speedup,
            "patch": ws.patch(win)[:MAX_SOURCE_CHARS],
            "iterations": (ws.root / "ITERATIONS.md").read_text(),
            "others": others or [],
        },
    )
    transcript = ledger.open("update_experience")
    try:
        card = drive(
            settings,
            transcript=transcript,
            system=SYSTEM,
            prompt=prompt,
            tools=NoTools(),
            output=LearnedCard,
        )
    except Exception as exc:
        transcript.close(f"failed: {exc}")
        say(f"no learned card: update_experience failed: {exc}")
        return None
    transcript.close("answered")
    path = write_card(
        learned_dir(settings.learned_dir),
        card,
        op=spec.name,
        kind=spec.kind.value,
        language=win.candidate.language,
        arch=arch_of(task_dir),
        receipt=receipt,
        ratios=ratios,
        overall=win.verdict.speedup,
        source=Path(win.candidate.path),
    )
    say(f"learned card written: {path}")
    return path
