"""The model-driven lane loop: the responder of the author and optimizer roles when a model is set.

Each round runs N conversations at once (`AgentSettings.parallel`, else from the budget:
tasks/agents/explore.py), kernel_author first in author mode, kernel_optimizer after and in
optimize mode, each from the same starting point with its own directive from the best's profile
digest and its own share of the round's checks. They write candidates in the workspace, try
drafts with the quick check, have candidates checked by the harness through the lane's check
function, then submit a RoundAnswer. The round keeps the best candidate by the record (never by
an answer); the next round starts from it, with the lessons, next ideas and dead ends of the
earlier ones (tasks/agents/memory.py). The lane stops when the check budget, the
token/dollar/time budget or the role's deadline is spent, after `patience` rounds without a
better verdict, or (author mode, when asked) at the first correct candidate. A claim in an
answer counts only with a receipt that matches a verdict (`Workspace.verify`); others are
recorded as ignored.
"""

from __future__ import annotations

import json
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from kernel_bakeoff.scripts import manifest as manifest_mod
from kernel_bakeoff.scripts.freeze import load_task
from kernel_bakeoff.tasks.agents.conversation import talk
from kernel_bakeoff.tasks.agents.drivers import RoleError
from kernel_bakeoff.tasks.agents.explore import default_width, run_round, shares
from kernel_bakeoff.tasks.agents.knowledge import cards_for, learned_dir, starts_for
from kernel_bakeoff.tasks.agents.memory import LaneMemory, directives
from kernel_bakeoff.tasks.agents.outputs import RoundAnswer
from kernel_bakeoff.tasks.agents.profile import take_digest
from kernel_bakeoff.tasks.agents.prompts import render_prompt
from kernel_bakeoff.tasks.agents.quick import QuickChecks
from kernel_bakeoff.tasks.agents.settings import AgentSettings
from kernel_bakeoff.tasks.agents.tools import LaneTools
from kernel_bakeoff.tasks.agents.transcript import Ledger
from kernel_bakeoff.tasks.agents.workspace import Workspace
from kernel_bakeoff.tasks.models.run import ClaimNote, SearchOutcome
from kernel_bakeoff.tasks.run.directory import write_json


def lane_dir_of(request) -> Path:
    return Path(request.record_dir).parent  # lanes/<key>/roles


def arch_of(task_dir: Path) -> str:
    data = json.loads((Path(task_dir) / "fingerprint.json").read_text())
    return data.get("arch") or "cpu"


def make_workspace(request, settings: AgentSettings) -> Workspace:
    i = request.inputs
    task_dir = Path(i.task_dir)
    spec, _, baseline = load_task(task_dir)
    manifest = {"oracle_sha256": manifest_mod.verify(task_dir)}  # re-derived, not read
    arch = arch_of(task_dir)
    learned = learned_dir(settings.learned_dir)
    sheet = {
        "spec": spec,
        "mode": i.mode,
        "language": i.language,
        "arch": arch,
        "budget": i.budget,
        "per_round": settings.per_round,
        "baseline_ms": baseline.medians(),
        "incumbent_language": spec.language,
        "reference_hidden": bool(Workspace.reference_of(spec)),
    }
    return Workspace.create(
        Path(i.workdir),
        lane_dir_of(request),
        task_dir,
        spec=spec,
        oracle=manifest["oracle_sha256"],
        sheet=sheet,
        cards=cards_for(i.language, arch, learned, spec.name),
        starts=starts_for(spec.name, learned),
        mode=i.mode,
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


def model_lane(request) -> SearchOutcome:
    """Responder of the author and optimizer roles: the model-driven lane loop."""
    i = request.inputs
    settings = AgentSettings.from_env()
    lane_dir = lane_dir_of(request)
    shutil.rmtree(lane_dir / "transcripts", ignore_errors=True)
    ws = make_workspace(request, settings)
    ledger = Ledger(lane_dir / "transcripts", settings)
    device_lock = threading.Lock()  # one use of the lane's device at a time: timed, quick, profile
    timed_check = i.evaluator.bind(request.deadline)

    def check_fn(ref):
        with device_lock:
            return timed_check(ref)

    device_env = getattr(i.evaluator, "device_env", {})
    quick = QuickChecks(
        ws.task_dir,
        lane_dir / "quick",
        entry_file=ws.spec.entry.partition(":")[0],
        allowance=settings.quick_checks,
        device_env=device_env,
        timeout_s=settings.quick_timeout_s,
        device_lock=device_lock,
    )
    memory = LaneMemory(lane_dir)
    budget, mode = int(i.budget), i.mode
    width = settings.parallel or default_width(budget, settings.per_round)
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
        split = shares(min(settings.per_round * width, left), width)
        role = "kernel_author" if mode == "author" and best is None else "kernel_optimizer"
        start = memory.start_from_best(ws)
        context = {
            **request.context,
            "round": rounds,
            "checks_left": left,
            "best": best,
            "memory": memory.text(),
            "start": start or "",
            "iterations": (ws.root / "ITERATIONS.md").read_text(),
        }

        lane = LaneRun(request, settings, ws, ledger, check_fn, quick, device_env, device_lock)

        def one(k: int, directive: str, lane=lane, role=role, context=context, split=split):
            return lane.converse(k, directive, split, role, context)

        outcomes = run_round(list(enumerate(directives(memory.digest, len(split)), 1)), one)
        for out in outcomes:
            if out.answer is not None:
                claim = judge_claim(ws, out.answer) | {
                    "round": rounds,
                    "lessons": out.answer.lessons,
                }
                claims.append(
                    claim | ({"conversation": out.conversation} if len(split) > 1 else {})
                )
                memory.note(rounds, out.conversation, out.directive, out.answer)
        found = ws.best()  # the round's best, by the record
        if found is not None and (best is None or found.verdict.speedup > best.verdict.speedup):
            best, stale = found, 0
            memory.set_best(best, best_digest(ws, best, lane_dir, device_env, device_lock))
        else:
            stale += 1
        memory.learn_from_record(ws, best)
        stopped = next((o.stopped for o in outcomes if o.stopped), None)
        failed = [o for o in outcomes if o.failed]
        if stopped:
            stop = stopped
            break
        if failed and len(failed) == len(outcomes):  # no conversation of the round answered
            error = failed[0].error
            stop = f"round {rounds} failed: {error if isinstance(error, RoleError) else failed[0].failed}"
            if ws.checked() == 0:  # nothing checked to stand on: the lane fails, with its record
                finish(ws, ledger, lane_dir, best, stop, claims, rounds, memory)
                raise failed[0].error
            break
    return finish(ws, ledger, lane_dir, best, stop, claims, rounds, memory)


@dataclass
class LaneRun:
    """What every conversation of a lane shares: the workspace and its record, the budgets'
    ledger, the checks (timed and quick) and the lane's device."""

    request: object
    settings: AgentSettings
    ws: Workspace
    ledger: Ledger
    check_fn: object
    quick: QuickChecks
    device_env: dict
    device_lock: object

    def converse(self, k: int, directive: str, split: list[int], role: str, context: dict):
        """Conversation `k` of a round (1-based), with its share of the round's checks."""
        i, settings, mode = self.request.inputs, self.settings, self.request.inputs.mode
        tools = LaneTools(
            self.ws,
            self.check_fn,
            language=i.language,
            mode=mode,
            allowance=lambda: 0,
            command_timeout_s=settings.command_timeout_s,
            output_chars=settings.tool_output_chars,
            input_chars=settings.tool_input_chars,
            device_env=self.device_env,
            origin=f"model:{settings.driver}:{settings.model}",
            quick=self.quick,
            remaining=self.request.deadline.remaining,
            device_lock=self.device_lock,
            on_checked=lambda result: first_correct(result, mode, settings, self.ledger),
        )
        share = split[k - 1]
        tools.allowance = lambda: share - len(tools.checked_this_call)
        prompt = render_prompt(
            role,
            {
                **context,
                "allowance": share,
                "directive": directive if len(split) > 1 else "",
                "conversation": f"{k} of {len(split)}",
            },
        )
        name = role if len(split) == 1 else f"{role}-{context['round']}.{k}"
        return talk(
            settings,
            self.ledger,
            name,
            prompt=prompt,
            tools=tools,
            output=RoundAnswer,
            remaining=self.request.deadline.remaining,
        )


def first_correct(result, mode: str, settings: AgentSettings, ledger: Ledger) -> None:
    """Author mode, when told to stop at the first correct candidate: one PASSED verdict of the
    record stops every conversation of the lane at its next turn."""
    if mode == "author" and settings.stop_at_first_correct and result.verdict.passed:
        ledger.halt(f"a correct candidate ({result.candidate.name}) was found; author mode stops")


def best_digest(ws, best, lane_dir: Path, device_env: dict, device_lock) -> object:
    """The new best's profile digest on its first timed workload, from its checked snapshot."""

    scratch = lane_dir / "memory-profile"
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "tmp").mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(scratch), "TMPDIR": str(scratch / "tmp")}
    workload = ws.spec.timed_workloads[0].name
    try:
        with device_lock:
            return take_digest(
                ws.task_dir,
                Path(best.candidate.path),
                workload,
                env,
                device_env,
                best.candidate.name,
            )
    except Exception as exc:  # the memory stands without it
        return f"none: profiling failed: {type(exc).__name__}: {exc}"


def finish(ws, ledger, lane_dir: Path, best, stop: str, claims: list, rounds: int, memory=None):
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
            "memory": memory.record.model_dump() if memory is not None else None,
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
