"""A bake-off request: checked before anything starts, and turned into lanes.

Everything here is plain Python (no Prefect), so `bakeoff run` refuses bad input with one line
before a server or a lane starts.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.timing import MIN_SAMPLES
from kernel_bakeoff.tasks.models.plan import DiscoverPlan, LaneMode
from kernel_bakeoff.tasks.models.run import BakeoffMode, Dispatch, GpuMode, LaneSpec, PoolConfig

# A deadline in seconds: more than nothing, and a number (a deadline of nan or inf is none)
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class BakeoffRequest(BaseModel):
    """What a bake-off is asked to do: the one parameter of the `bakeoff` flow, and what
    `bakeoff run` builds from its options. The fields check themselves (pydantic); `validate`
    adds what needs the host (the input exists, the devices and languages are known)."""

    kernel_path: str
    mode: BakeoffMode = "optimize"
    target_language: str | None = None
    backends: list[str] | None = None
    budget: int = Field(4, ge=1, description="candidates each lane may check")
    gpu_ids: list[str] | None = None
    gpu_mode: GpuMode = "pool"
    cpu_slots: int | None = Field(None, ge=1, description="lanes at once on a host without GPUs")
    fresh: bool = False
    dispatch: Dispatch = "local"
    run_dir: str | None = None
    runs_root: str = "runs"
    agents: dict[str, str] = Field(default_factory=dict)
    strategy: str = "auto"
    agent_timeout_s: Seconds | None = None
    agent_retries: int | None = Field(None, ge=0)
    lane_timeout_s: Seconds = 3600.0
    check_timeout_s: Seconds = 300.0
    samples: int | None = Field(
        None,
        ge=MIN_SAMPLES,
        description="the reviewer trusts no timing of fewer samples, so no candidate could win",
    )
    lane_deployment: str = "lane/local"
    apply_to_original: bool = False  # the winner onto a new branch (tasks/apply/)
    rounds: int = Field(1, ge=1)  # a campaign of this many rounds (flows/campaign.py)
    # A campaign round's start (flows/campaign.py): the best variant so far, for every lane
    seed: dict | None = None
    history_url: str | None = None  # the history store (tasks/history/records.py); None: default

    @field_validator("mode", mode="before")
    @classmethod
    def _mode_in_any_case(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @property
    def pool(self) -> PoolConfig:
        return PoolConfig(gpu_ids=self.gpu_ids, gpu_mode=self.gpu_mode, cpu_slots=self.cpu_slots)


def _said(error: dict) -> str:
    """What is wrong with one field, in the CLI's words where pydantic's are not plain."""
    kind, ctx, got = error["type"], error.get("ctx") or {}, error.get("input")
    field = str(error["loc"][0]) if error["loc"] else ""
    if kind == "literal_error":
        choices = str(ctx.get("expected", "")).replace("'", "")
        return f"unknown {field} {got!r}; use {choices}"
    if kind == "greater_than_equal":
        why = BakeoffRequest.model_fields[field].description if field else None
        return f"must be at least {ctx['ge']}, got {got}" + (f" ({why})" if why else "")
    if kind in ("greater_than", "finite_number"):  # Seconds, the one such constraint here
        return f"must be positive and finite (seconds), got {got}"
    return error["msg"].removeprefix("Value error, ")


def parse_request(fields: dict) -> BakeoffRequest:
    """A request from what a user gave, or BadInput naming the first field wrong, in one line:
    the one place a request's ValidationError becomes the CLI's refusal."""
    try:
        return BakeoffRequest(**fields)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "request"
        raise BadInput(where, _said(first)) from None


def lane_keys(wanted: list[tuple[str, LaneMode]]) -> list[LaneSpec]:
    """Plain language as key, or `<language>_<mode>` for a language that has two lanes."""
    per_language: dict[str, int] = {}
    for lang, _ in wanted:
        per_language[lang] = per_language.get(lang, 0) + 1
    return [
        LaneSpec(
            key=lang if per_language[lang] == 1 else f"{lang}_{mode}", language=lang, mode=mode
        )
        for lang, mode in wanted
    ]


def resolve_lanes(
    input_language: str,
    mode: str,
    *,
    target_language: str | None = None,
    backends: list[str] | None = None,
    plan: DiscoverPlan | None = None,
) -> tuple[list[LaneSpec], list[str]]:
    """The lanes of a run, in order, and warnings about the plan they came from.

    optimize: the input's language, in place. author: `target_language` (default the input's),
    from scratch. bakeoff: the input's language always competes first as an optimize lane;
    `backends` only adds lanes (optimize for the input's language, else the plan's mode for that
    language, else author); without `backends` the Discover plan decides. De-duplicated on
    language and mode.
    """
    own = input_language.lower()
    if mode == "optimize":
        return lane_keys([(own, "optimize")]), []
    if mode == "author":
        return lane_keys([((target_language or own).lower(), "author")]), []
    warnings: list[str] = []
    entries = plan.plan if plan else []
    unnamed = [e for e in entries if not (e.language or "").strip()]
    if unnamed:
        warnings.append(
            f"{len(unnamed)} Discover plan entr{'y' if len(unnamed) == 1 else 'ies'} named no "
            f"language; attributed to the input's language {own!r}"
        )
    planned = [((e.language or own).strip().lower() or own, e.mode) for e in entries]
    wanted: list[tuple[str, LaneMode]] = [(own, "optimize")]
    if backends:
        plan_mode = {lang: m for lang, m in planned}
        wanted += [(b, "optimize" if b == own else plan_mode.get(b, "author")) for b in backends]
    else:
        wanted += planned
    unique = list(dict.fromkeys(wanted))
    return lane_keys(unique), warnings
