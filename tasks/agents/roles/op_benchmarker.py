"""op_benchmarker: after Discover, the author plan from its measured table.

It chooses which languages to write the op in from scratch, and why. The planner stays what it
is, the measuring step; op_benchmarker's AuthorPlan replaces only the plan's author entries.
It is asked only where a model (or a drop-in named in `agents`) answers it; otherwise the flow
goes on with Discover's plan and says so in one line.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.agents import without_model
from kernel_bakeoff.tasks.agents.conversation import answer_request
from kernel_bakeoff.tasks.agents.outputs import AuthorPlan
from kernel_bakeoff.tasks.agents.registry import Role
from kernel_bakeoff.tasks.agents.request import RoleInputs
from kernel_bakeoff.tasks.models.plan import DiscoverPlan, PlanEntry
from kernel_bakeoff.tasks.models.run import DiscoverOutcome


class AuthorPlanInputs(RoleInputs):
    languages: list[str] = Field(default_factory=list)  # those a backend exists for, lower case
    plan: DiscoverPlan | None = None  # Discover's plan, which the deterministic answer keeps


def benchmark(request) -> AuthorPlan:
    """Responder of op_benchmarker when a model is configured."""
    known = set(request.inputs.languages)

    def known_languages(answer: AuthorPlan) -> None:
        unknown = [lang for lang in answer.languages if lang.lower() not in known]
        if unknown:
            raise ValueError(f"no backend for {unknown}; choose among {sorted(known)}")

    return answer_request(request, AuthorPlan, "op_benchmarker", known_languages)


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
    """Discover's outcome with its author entries from op_benchmarker's AuthorPlan, which a
    model (or a drop-in) answers: flows/bakeoff.py `author_plan` asks it only then, and says
    the line without one. Unchanged, with one line said, where it fails."""

    # here: role_task imports the registry, which imports this module; the backends take 3 s
    from kernel_bakeoff.tasks.agents.role_task import RoleFailed, ask
    from kernel_bakeoff.tasks.backends import languages  # (the 3 s above)

    record_dir = Path(run_dir) / "discover" / "roles"
    kept = record_dir / "op_benchmarker.answer.json"
    spec = OpSpec.read(task_dir)
    known = [lang.lower() for lang in languages()]
    if outcome.reused and kept.is_file():  # the same measurements: the same plan, no new call
        answer = AuthorPlan.model_validate_json(kept.read_text())
    else:
        try:
            answer = ask(
                "op_benchmarker",
                inputs=AuthorPlanInputs(languages=known, plan=outcome.plan),
                context={
                    "op": spec.name,
                    "kind": spec.kind.value,
                    "language": spec.language,
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


ROLE = Role(
    name="op_benchmarker",
    prompt="op_benchmarker",
    inputs=AuthorPlanInputs,
    output=AuthorPlan,
    responder=without_model.author_plan,
    model_responder=benchmark,
    timeout_s=600,
)
