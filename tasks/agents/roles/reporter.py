"""reporter: after the ranking, the report's prose from the ranked table.

Numbers come from the harness: a sentence that quotes a figure the table does not hold is
dropped, and the report says how many were and which figures. It is asked only where a model
(or a drop-in named in `agents`) answers it; otherwise the report has no prose, said in one line.
"""

from __future__ import annotations

import re
from pathlib import Path

from kernel_bakeoff.tasks.agents import without_model
from kernel_bakeoff.tasks.agents.conversation import answer_request
from kernel_bakeoff.tasks.agents.outputs import ReportProse
from kernel_bakeoff.tasks.agents.registry import Role
from kernel_bakeoff.tasks.agents.request import RoleInputs
from kernel_bakeoff.tasks.models.run import Report

# a figure: digits not glued to a word (rows64, fp32, sm_90 are names), with an optional x, %
FIGURE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?=x\b|%|[^\w]|$)")


class ReporterInputs(RoleInputs):
    """The reporter works from its prompt alone (the table in it)."""


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
    return answer_request(request, ReportProse, "reporter")


def report_prose(report: Report, agents: dict | None, say) -> tuple[str, list[str]]:
    """(prose, dropped sentences) for the report, from the reporter a model (or a drop-in)
    answers: flows/report.py `prose_for` asks it only then, and says the line without one."""
    from kernel_bakeoff.tasks.agents.role_task import (  # here: role_task imports the registry, which imports this module
        RoleFailed,
        ask,
    )

    table = table_text(report)
    try:
        answer = ask(
            "reporter",
            inputs=ReporterInputs(),
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


ROLE = Role(
    name="reporter",
    prompt="reporter",
    inputs=ReporterInputs,
    output=ReportProse,
    responder=without_model.no_prose,
    model_responder=write_prose,
    timeout_s=600,
)
