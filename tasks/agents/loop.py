"""The model-driven lane loop: the responder of the author and optimizer roles when a model is set.

Each round is one conversation (kernel_author first in author mode, kernel_optimizer after and in
optimize mode): the model writes candidates in the workspace and has each checked by the harness
through the lane's check function, up to `per_round` per round within the lane's budget, then
submits a RoundAnswer. The flow keeps the best candidate by the verdicts on disk (never by the
answer), and stops when the check budget, the token/dollar/time budget or the role's deadline is
spent, or after `patience` rounds without a better verdict. A claim in an answer counts only with
a receipt that matches a verdict (`Workspace.verify`); others are recorded as ignored.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from scripts import manifest as manifest_mod
from scripts.freeze import load_task
from tasks.agents.knowledge import cards_for, learned_dir, starts_for
from tasks.agents.messages import RoleError
from tasks.agents.outputs import RoundAnswer
from tasks.agents.settings import AgentSettings
from tasks.agents.tools import LaneTools
from tasks.agents.transcript import BudgetSpent, Ledger
from tasks.agents.workspace import Workspace
from tasks.results import ClaimNote, SearchOutcome
from tasks.run_store import write_json

SYSTEM = (
    "You are a role agent of kernel-bakeoff, a system that makes GPU kernels faster and only "
    "believes numbers its harness measured. Work only through the tools you are given, only "
    "inside the lane workspace. Never time anything yourself and never report a number the "
    "harness did not give you: cite the receipt of every candidate you name. Finish every role "
    "call by calling `submit` with an answer that matches its schema."
)


def drive(settings: AgentSettings, **conversation):
    """One role conversation through the configured driver."""
    if settings.driver == "claude-code":
        from tasks.agents.claude_code import converse
    else:
        from tasks.agents.messages import converse
    return converse(settings=settings, **conversation)


def lane_dir_of(request) -> Path:
    return Path(request.record_dir).parent  # lanes/<key>/roles


def arch_of(task_dir: Path) -> str:
    data = json.loads((Path(task_dir) / "fingerprint.json").read_text())
    return data.get("arch") or "cpu"


def make_workspace(request, settings: AgentSettings) -> Workspace:
    i = request.inputs
    task_dir = Path(i["task_dir"])
    spec, _, baseline = load_task(task_dir)
    manifest = {"oracle_sha256": manifest_mod.verify(task_dir)}  # re-derived, not read
    arch = arch_of(task_dir)
    learned = learned_dir(settings.learned_dir)
    sheet = {
        "spec": spec,
        "mode": i["mode"],
        "language": i["language"],
        "arch": arch,
        "budget": i["budget"],
        "per_round": settings.per_round,
        "baseline_ms": {k: v["median_ms"] for k, v in baseline["workloads"].items()},
        "incumbent_language": spec.language,
        "reference_hidden": bool(Workspace.reference_of(spec)),
    }
    return Workspace.create(
        Path(i["workdir"]),
        lane_dir_of(request),
        task_dir,
        spec=spec,
        oracle=manifest["oracle_sha256"],
        sheet=sheet,
        cards=cards_for(i["language"], arch, learned, spec.name),
        starts=starts_for(spec.name, learned),
        mode=i["mode"],
    )


SHOWN_DECIMALS = 3  # the coarsest figure the model is shown (ITERATIONS.md; `check` says 4)


def same_figure(claimed: float, measured: float | None) -> bool:
    """Whether a claimed speedup is the measured one as the model was shown it: equal when
    rounded to the coarsest precision shown, so an honest copy of a rounded figure agrees."""
    if measured is None:
        return False
    return abs(claimed - measured) <= 0.5 * 10**-SHOWN_DECIMALS * (1 + 1e-9)


def judge_claim(ws: Workspace, answer: RoundAnswer) -> dict:
    """What the answer claimed and whether it counts (a receipt that matches the record).
    `why` is set only for a claim that was ignored (no matching receipt) or corrected (the
    receipt matches, the number is not the verdict's at the precision shown)."""
    claim = answer.best
    if claim is None:
        return {"claimed": None, "counted": False, "why": "no candidate named"}
    found = ws.verify(claim.receipt, claim.candidate)
    record = {"candidate": claim.candidate, "receipt": claim.receipt, "claimed": claim.speedup}
    if found is None:
        return record | {"counted": False, "why": "no matching receipt: the claim is ignored"}
    measured = found.verdict.speedup
    record |= {"counted": True, "measured": measured, "status": found.verdict.status.value}
    if claim.speedup is not None and not same_figure(claim.speedup, measured):
        shown = "none" if measured is None else f"{measured:.{SHOWN_DECIMALS}f}x"
        record["why"] = f"the claimed number is not the verdict's ({shown}); the verdict's counts"
    return record


def run_lane(request) -> SearchOutcome:
    """Responder of the author and optimizer roles: the model-driven lane loop."""
    from tasks.agents.wrapper import render_prompt

    i = request.inputs
    settings = AgentSettings.from_env()
    lane_dir = lane_dir_of(request)
    shutil.rmtree(lane_dir / "transcripts", ignore_errors=True)
    ws = make_workspace(request, settings)
    ledger = Ledger(lane_dir / "transcripts", settings)
    check_fn = i["evaluator"].bind(request.deadline)
    budget, mode = int(i["budget"]), i["mode"]
    best, stale, stop, claims, rounds = None, 0, "", [], 0
    while True:
        left = budget - ws.checked()
        why = (
            (left <= 0 and f"check budget spent ({budget} candidates)")
            or (stale >= settings.patience and f"no better verdict for {stale} round(s)")
            or (rounds >= settings.max_rounds and f"{settings.max_rounds} rounds")
            or ledger.spent()
            or (request.deadline.remaining() <= 0 and "the lane's deadline passed")
        )
        if why:
            stop = why
            break
        rounds += 1
        allowance, before = min(settings.per_round, left), ws.checked()
        tools = LaneTools(
            ws,
            check_fn,
            language=i["language"],
            mode=mode,
            allowance=lambda a=allowance, b=before: a - (ws.checked() - b),
            command_timeout_s=settings.command_timeout_s,
            output_chars=settings.tool_output_chars,
            input_chars=settings.tool_input_chars,
            device_env=getattr(i["evaluator"], "device_env", {}),
            origin=f"model:{settings.driver}:{settings.model}",
        )
        role = "kernel_author" if mode == "author" and best is None else "kernel_optimizer"
        prompt = render_prompt(
            role,
            {
                **request.context,
                "round": rounds,
                "allowance": allowance,
                "checks_left": left,
                "best": best,
                "iterations": (ws.root / "ITERATIONS.md").read_text(),
            },
        )
        transcript = ledger.open(role)
        try:
            answer = drive(
                settings,
                transcript=transcript,
                system=SYSTEM,
                prompt=prompt,
                tools=tools,
                output=RoundAnswer,
                remaining=request.deadline.remaining,
            )
            transcript.close("answered")
        except BudgetSpent as exc:
            transcript.close(f"stopped: {exc}")
            stop = str(exc)
            break
        except Exception as exc:  # a fault of the model, the driver or the flow's own code
            reason = str(exc) if isinstance(exc, RoleError) else f"{type(exc).__name__}: {exc}"
            transcript.close(f"failed: {reason}")
            stop = f"round {rounds} failed: {reason}"
            if ws.checked() == 0:  # nothing checked to stand on: the lane fails, with its record
                finish(ws, ledger, lane_dir, best, stop, claims, rounds)
                raise
            break
        claims.append(judge_claim(ws, answer) | {"round": rounds, "lessons": answer.lessons})
        found = ws.best()
        if found is not None and (best is None or found.verdict.speedup > best.verdict.speedup):
            best, stale = found, 0
        else:
            stale += 1
    return finish(ws, ledger, lane_dir, best, stop, claims, rounds)


def finish(ws, ledger, lane_dir: Path, best, stop: str, claims: list, rounds: int):
    patch = ""
    if best is not None:
        patch = ws.patch(best)
        (lane_dir / "best.patch").write_text(patch)
    write_json(
        lane_dir / "agent.json",
        {
            "stopped": stop,
            "rounds": rounds,
            "best": best.candidate.name if best else None,
            "claims": claims,
            "git_history": ws.history(),
            "usage": ledger.usage.model_dump(),
        },
    )
    noted = noted_claims(claims)
    ignored = [c for c in noted if c.outcome == "ignored"]
    notes = f"stopped: {stop}" + (
        f"; {len(ignored)} claim(s) without a matching receipt ignored" if ignored else ""
    )
    if len(noted) > len(ignored):
        notes += f"; {len(noted) - len(ignored)} claimed number(s) corrected by the verdict"
    publish(ledger, lane_dir, notes)
    return SearchOutcome(candidates=ws.results(), notes=notes, claims=noted)


def noted_claims(claims: list[dict]) -> list[ClaimNote]:
    """The claims the record did not bear out, for the report: ignored or corrected."""
    noted = []
    for c in claims:
        if not c.get("why") or c.get("candidate") is None:  # borne out, or nothing named
            continue
        noted.append(
            ClaimNote(
                round=c.get("round", 0),
                candidate=str(c.get("candidate")),
                claimed=c.get("claimed"),
                measured=c.get("measured"),
                outcome="corrected" if c.get("counted") else "ignored",
                why=c["why"],
            )
        )
    return noted


def publish(ledger: Ledger, lane_dir: Path, notes: str) -> None:
    """The lane's transcript summary as a Prefect artifact (where a run context exists)."""
    import re

    text = f"## Agent transcript: lane {lane_dir.name}\n\n{notes}\n\n{ledger.markdown()}\n\n"
    text += f"Transcripts: `{ledger.directory}`"
    try:
        from prefect.artifacts import create_markdown_artifact

        key = re.sub(r"[^a-z0-9-]+", "-", f"agent-{lane_dir.parent.parent.name}-{lane_dir.name}")
        create_markdown_artifact(
            text, key=key[:100].strip("-"), description="agent transcript", _sync=True
        )
    except Exception:  # no Prefect run context (a direct call): the files are the record
        pass
    (ledger.directory / "summary.md").write_text(text + "\n")
