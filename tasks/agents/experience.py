"""update_experience: one learned card after a measured win of a model-driven lane.

Not a role asked through `ask`: the lane (or, in bakeoff mode, the bake-off once for all its
lanes) calls it after the review. It writes a card only when the lane's accepted candidate beat
the baseline by more than the measured spread and its receipt holds the same verdict, and says
why not otherwise.
"""

from __future__ import annotations

from pathlib import Path

from kernel_bakeoff.scripts.freeze import load_task
from kernel_bakeoff.tasks.agents.conversation import talk
from kernel_bakeoff.tasks.agents.knowledge import learned_dir, write_card
from kernel_bakeoff.tasks.agents.loop import arch_of
from kernel_bakeoff.tasks.agents.outputs import LearnedCard
from kernel_bakeoff.tasks.agents.prompts import render_prompt
from kernel_bakeoff.tasks.agents.review import MAX_SOURCE_CHARS
from kernel_bakeoff.tasks.agents.settings import AgentSettings, model_configured
from kernel_bakeoff.tasks.agents.transcript import Ledger
from kernel_bakeoff.tasks.agents.workspace import Workspace
from kernel_bakeoff.tasks.check import judgement
from kernel_bakeoff.tasks.check.standing import baseline_stats
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.run.directory import read_json


def measured_win(lane, task_dir: Path) -> CandidateResult | None:
    """The lane's accepted candidate if it beat the baseline by more than the measured spread."""

    review_ = lane.review
    if review_ is None or review_.decision != "accepted":
        return None
    chosen = next((c for c in lane.candidates if c.candidate.name == review_.candidate), None)
    if chosen is None or chosen.verdict.speedup is None:
        return None
    m = judgement.margin(chosen, baseline_stats(task_dir)[1])
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
    try:
        card = talk(settings, ledger, "update_experience", prompt=prompt, output=LearnedCard)
    except Exception as exc:
        say(f"no learned card: update_experience failed: {exc}")
        return None
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
        memory=read_json(lane_dir / "memory.json"),
    )
    say(f"learned card written: {path}")
    return path
