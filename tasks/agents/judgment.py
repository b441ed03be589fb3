"""The bake-off's two judgment roles around the lanes: op_benchmarker and reporter.

    op_benchmarker  after Discover: reads its measured table and writes the author plan (which
                    languages to write the op in from scratch, and why). The planner role stays
                    what it is, the measuring step (the harness checks what exists and plans
                    optimize lanes where an editable implementation exists, author lanes else);
                    op_benchmarker's AuthorPlan replaces only the plan's author entries.
    reporter        after the ranking: the report's prose, from the ranked table. Numbers come
                    from the harness: a sentence that quotes a figure the table does not hold
                    is dropped, and the report says how many were and which figures.

Both are asked only where a model answers them (a key is set, or a drop-in is named in
`agents`); otherwise the flow goes on as without them and says so in one log line.
"""

from __future__ import annotations

import re
from pathlib import Path

from tasks.agents.loop import SYSTEM, drive
from tasks.agents.outputs import AuthorPlan, ReportProse
from tasks.agents.review import NoTools
from tasks.agents.settings import AgentSettings
from tasks.agents.transcript import Ledger
from tasks.results import DiscoverOutcome, Report

# a figure: digits not glued to a word (rows64, fp32, sm_90 are names), with an optional x, %
FIGURE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?=x\b|%|[^\w]|$)")


def _model_answers(role: str, agents: dict | None) -> bool:
    from tasks.agents.wrapper import ROLES, responder_for

    return responder_for(role, agents) != ROLES[role].responder


def _converse(request, output, prompt_role: str, accept=None):
    """A tool-less conversation for a judgment role; its transcript beside the role's records."""
    settings = AgentSettings.from_env()
    ledger = Ledger(Path(request.record_dir).parent / "transcripts", settings)
    transcript = ledger.open(prompt_role)
    try:
        answer = drive(
            settings,
            transcript=transcript,
            system=SYSTEM,
            prompt=request.prompt,
            tools=NoTools(),
            output=output,
            remaining=request.deadline.remaining,
            accept=accept,
        )
    except Exception as exc:
        transcript.close(f"failed: {exc}")
        raise
    transcript.close("answered")
    return answer


# --- op_benchmarker


def benchmark(request) -> AuthorPlan:
    """Responder of op_benchmarker when a model is configured."""
    known = set(request.inputs["languages"])

    def known_languages(answer: AuthorPlan) -> None:
        unknown = [lang for lang in answer.languages if lang.lower() not in known]
        if unknown:
            raise ValueError(f"no backend for {unknown}; choose among {sorted(known)}")

    return _converse(request, AuthorPlan, "op_benchmarker", known_languages)


def measured_rows(outcome: DiscoverOutcome) -> list[dict]:
    plan = outcome.plan
    found = [*plan.measured, *([plan.env_candidate] if plan.env_candidate else [])]
    return [
        {
            "name": c.candidate.name,
            "language": c.candidate.language,
            "status": c.verdict.status.value,
            "speedup": c.verdict.speedup,
        }
        for c in found
    ]


def plan_authors(
    outcome: DiscoverOutcome, task_dir: str, run_dir: str, agents: dict | None, say
) -> DiscoverOutcome:
    """Discover's outcome with its author entries from op_benchmarker's AuthorPlan (where a
    model answers it); unchanged, with one line said, where none does or it fails."""
    import json

    from tasks.agents.wrapper import RoleFailed, ask
    from tasks.backends import languages
    from tasks.models import PlanEntry

    if not _model_answers("op_benchmarker", agents):
        say("op_benchmarker: no model configured; the author lanes are Discover's plan")
        return outcome
    record_dir = Path(run_dir) / "discover" / "roles"
    kept = record_dir / "op_benchmarker.answer.json"
    spec = json.loads((Path(task_dir) / "spec.json").read_text())
    known = [lang.lower() for lang in languages()]
    if outcome.reused and kept.is_file():  # the same measurements: the same plan, no new call
        answer = AuthorPlan.model_validate_json(kept.read_text())
    else:
        try:
            answer = ask(
                "op_benchmarker",
                inputs={"languages": known, "plan": outcome.plan},
                context={
                    "op": spec["name"],
                    "kind": spec.get("kind", "other"),
                    "language": spec["language"],
                    "measured": measured_rows(outcome),
                    "languages": known,
                },
                record_dir=record_dir,
                agents=agents,
            )
        except RoleFailed as exc:
            say(f"op_benchmarker failed ({exc.reason}); the author lanes are Discover's plan")
            return outcome
    plan = outcome.plan
    kept_entries = [e for e in plan.plan if e.mode != "author"]  # a language may have both
    why = "; ".join(answer.reasons) or "op_benchmarker's plan"
    authors = [
        PlanEntry(language=lang.lower(), mode="author", reason=f"op_benchmarker: {why}")
        for lang in dict.fromkeys(answer.languages)
    ]
    say(f"op_benchmarker: author lanes {', '.join(e.language for e in authors) or 'none'} ({why})")
    new_plan = plan.model_copy(update={"plan": kept_entries + authors})
    return outcome.model_copy(update={"plan": new_plan})


# --- reporter


def figures(text: str) -> set[float]:
    return {float(m.group(1)) for m in FIGURE.finditer(text)}


def table_text(report: Report) -> str:
    """The ranked table the reporter is given: every figure its prose may quote."""
    names = list(report.baseline_ms)
    head = ["rank", "candidate", "language", "mode", *names, "overall", "bar", "status"]
    lines = [
        "baseline ms: " + ", ".join(f"{n} {ms:.4g}" for n, ms in report.baseline_ms.items()),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in report.rows:
        ratio = ["-" if r.speedups.get(n) is None else f"{r.speedups[n]:.3f}x" for n in names]
        cells = [str(r.rank), r.name, r.language, r.mode, *ratio]
        cells += ["-" if r.speedup is None else f"{r.speedup:.3f}x"]
        cells += ["-" if r.margin is None else f"{1 + r.margin:.3f}x", r.status]
        lines.append("| " + " | ".join(cells) + " |")
    w = report.winner
    lines += ["", f"winner: {w.name} at {w.speedup:.3f}x" if w else "winner: none (kept)"]
    return "\n".join(lines)


def checked_prose(answer: ReportProse, table: str) -> tuple[str, list[str]]:
    """The prose with every sentence that quotes a figure not in the table dropped; and the
    dropped sentences, each with the figures that were not the table's."""
    allowed = figures(table)
    kept, dropped = [], []

    def screen(sentence: str) -> bool:
        foreign = sorted(f for f in figures(sentence) if f not in allowed)
        if foreign:
            dropped.append(f"{sentence.strip()} [not in the table: {', '.join(map(str, foreign))}]")
        return not foreign

    summary = [s for s in re.split(r"(?<=[.!?])\s+", answer.summary.strip()) if s]
    kept.append(" ".join(s for s in summary if screen(s)))
    caveats = [c for c in answer.caveats if screen(c)]
    text = kept[0] + ("\n\n" + "\n".join(f"- {c}" for c in caveats) if caveats else "")
    return text.strip(), dropped


def write_prose(request) -> ReportProse:
    """Responder of reporter when a model is configured."""
    return _converse(request, ReportProse, "reporter")


def report_prose(report: Report, agents: dict | None, say) -> tuple[str, list[str]]:
    """(prose, dropped sentences) for the report, or ("", []) without a model (one line said)."""
    from tasks.agents.wrapper import RoleFailed, ask

    if not _model_answers("reporter", agents):
        say("reporter: no model configured; the report has no prose")
        return "", []
    table = table_text(report)
    try:
        answer = ask(
            "reporter",
            inputs={},
            context={"kernel": report.kernel, "mode": report.mode, "table": table},
            record_dir=Path(report.run_dir) / "reporter" / "roles",
            agents=agents,
        )
    except RoleFailed as exc:
        say(f"reporter failed ({exc.reason}); the report has no prose")
        return "", []
    text, dropped = checked_prose(answer, table)
    if dropped:
        say(f"reporter: {len(dropped)} sentence(s) dropped for figures not in the table")
    return text, dropped
