"""One log line per phase of a bake-off, on the run a user opens (the bake-off's own flow run),
so `prefect deployment run ... --watch` and the UI's log say how each phase ended."""

from __future__ import annotations

from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.discover.table import matched_line
from kernel_bakeoff.tasks.models.progress import RunProgress
from kernel_bakeoff.tasks.models.run import DiscoverOutcome, LaneResult, Report
from kernel_bakeoff.tasks.report.ranking import tier


def _best(candidates) -> str:
    """The fastest passed candidate, the baseline's own re-measurement left out."""
    passed = [
        c
        for c in candidates
        if c.verdict.speedup is not None
        and c.candidate.mode != "baseline"
        and c.verdict.status is Status.PASSED
    ]
    if not passed:
        return "no candidate passed"
    best = max(passed, key=lambda c: c.verdict.speedup)
    return f"fastest passed {best.candidate.name} at {best.verdict.speedup:.3f}x"


def frozen_line(frozen) -> str:
    times = ", ".join(f"{k} {v:.4g} ms" for k, v in frozen.baseline_ms.items())
    return (
        f"frozen baseline: {frozen.op} ({frozen.language}), oracle {frozen.oracle_sha256[:12]}; "
        f"{times}"
    )


def discover_line(found: DiscoverOutcome | None) -> str:
    if found is None:
        return "Discover: nothing (it failed, see the warning)"
    plan = found.plan
    measured = [*plan.measured, *([plan.env_candidate] if plan.env_candidate else [])]
    rows = ", ".join(
        f"{c.candidate.name} {c.verdict.status.value}"
        + (f" {c.verdict.speedup:.3f}x" if c.verdict.speedup else "")
        for c in measured
    )
    planned = ", ".join(f"{p.language}:{p.mode}" for p in plan.plan) or "none"
    reused = " (reused)" if found.reused else ""

    return (
        f"Discover{reused}: measured {rows or 'nothing'}; planned lanes {planned}; "
        + matched_line(plan)
    )


def lane_line(lane: LaneResult) -> str:
    state = lane.status + (" (reused from an earlier run)" if lane.reused else "")
    why = f" ({lane.reason})" if lane.reason else ""
    return f"lane {lane.key}: {state}{why}; {len(lane.candidates)} candidate(s), " + _best(
        lane.candidates
    )


def winner_line(report: Report) -> str:
    w = report.winner
    if w is None and not report.judged():
        return f"no verdict: no candidate was checked ({report.why_nothing_was_judged()})"
    if w is None:
        return no_winner_line(report)
    need = f" (needed {1 + w.margin:.3f}x)" if w.margin is not None else ""
    return f"winner {w.name} ({w.language} {w.mode}) at {w.speedup:.3f}x{need}"


def no_winner_line(report: Report) -> str:
    """Why nothing won, from the ranking: the fastest candidate whose figure stands and the bar
    it missed, and a faster one that was flagged, with the flag. "no winner" alone beside a
    flagged 1.9x in the table read as a contradiction."""
    timed = [r for r in report.rows if r.comparable and r.mode != "baseline" and r.speedup]
    why = []
    stands = next((r for r in timed if tier(r) == 0), None)
    if stands is not None:
        bar = f" against a bar of {1 + stands.margin:.3f}x" if stands.margin is not None else ""
        why.append(f"the fastest that stands, {stands.name}, read {stands.speedup:.3f}x{bar}")
    doubted = next((r for r in timed if tier(r) == 1), None)
    if doubted is not None and (stands is None or doubted.speedup > stands.speedup):
        why.append(
            f"{doubted.name} read {doubted.speedup:.3f}x but was {doubted.status}: "
            + (doubted.detail or "no reason given")
        )
    said = "; ".join(why) or "no candidate passed its check and was timed"
    return f"no winner: {said}; the original kernel is kept"


def resumed_line(previous: RunProgress | dict, attempt: str, reused: list[str]) -> str | None:
    """Said when this run continues one that stopped before its report (crashed, cancelled,
    interrupted): what it takes over."""
    previous = RunProgress.model_validate(previous)
    if not previous.unfinished:
        return None
    if previous.attempt == attempt and not reused:
        return None
    kept = f"reusing finished lane(s) {', '.join(reused)}" if reused else "no lane had finished"
    return (
        f"resumed: an earlier run ({(previous.attempt or '?')[:8]}) stopped in phase "
        f"{previous.phase!r}; {kept}"
    )
