"""A bake-off request: checked before anything starts, and turned into lanes.

Everything here is plain Python (no Prefect), so `bakeoff run` refuses bad input with one line
before a server or a lane starts.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from pydantic import BaseModel, Field

from scripts.errors import BadInput
from tasks.models import DiscoverPlan, LaneMode
from tasks.results import LaneSpec, PoolConfig

MODES = ("optimize", "author", "bakeoff")
DISPATCH = ("local", "deployment")


class BakeoffRequest(BaseModel):
    kernel_path: str
    mode: str = "optimize"
    target_language: str | None = None
    backends: list[str] | None = None
    budget: int = 4
    gpu_ids: list[str] | None = None
    gpu_mode: str = "pool"
    cpu_slots: int | None = None
    fresh: bool = False
    dispatch: str = "local"
    run_dir: str | None = None
    runs_root: str = "runs"
    agents: dict[str, str] = Field(default_factory=dict)
    strategy: str = "auto"
    agent_timeout_s: float | None = None
    agent_retries: int | None = None
    lane_timeout_s: float = 3600.0
    check_timeout_s: float = 300.0
    samples: int | None = None
    lane_deployment: str = "lane/local"
    apply_to_original: bool = False  # the winner onto a new branch (tasks/apply/)
    rounds: int = 1  # a campaign of this many rounds (flows/campaign.py)

    @property
    def pool(self) -> PoolConfig:
        return PoolConfig(gpu_ids=self.gpu_ids, gpu_mode=self.gpu_mode, cpu_slots=self.cpu_slots)


def _languages() -> list[str]:
    from tasks.backends import languages

    return [lang.lower() for lang in languages()]


def _known_language(field: str, value: str, known: list[str]) -> str:
    lang = value.strip().lower()
    if lang not in known:
        raise BadInput(field, f"unknown backend {value!r}; known: {', '.join(known)}")
    return lang


def validate(req: BakeoffRequest) -> BakeoffRequest:
    """Return the request normalised, or raise BadInput naming the first thing wrong with it."""
    mode = req.mode.strip().lower()
    if mode not in MODES:
        raise BadInput("mode", f"unknown mode {req.mode!r}; use optimize, author or bakeoff")
    if req.budget < 1:
        raise BadInput("budget", f"must be at least 1 iteration, got {req.budget}")
    if req.gpu_mode not in ("pool", "pin"):
        raise BadInput("gpu_mode", f"unknown mode {req.gpu_mode!r}; use pool or pin")
    if req.dispatch not in DISPATCH:
        raise BadInput("dispatch", f"unknown dispatch {req.dispatch!r}; use local or deployment")
    for field in ("lane_timeout_s", "check_timeout_s", "agent_timeout_s"):
        value = getattr(req, field)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise BadInput(field, f"must be positive and finite (seconds), got {value}")
    from tasks.roles_default import MIN_SAMPLES

    if req.samples is not None and req.samples < MIN_SAMPLES:
        raise BadInput(
            "samples",
            f"must be at least {MIN_SAMPLES}, got {req.samples}: the reviewer trusts no timing "
            "of fewer samples, so no candidate could win",
        )
    if req.cpu_slots is not None and req.cpu_slots < 1:
        raise BadInput("cpu_slots", f"must be at least 1, got {req.cpu_slots}")
    if req.agent_retries is not None and req.agent_retries < 0:
        raise BadInput("agent_retries", f"must be 0 or more, got {req.agent_retries}")
    known = _languages()
    backends = None
    if req.backends is not None:
        backends = [_known_language("backends", b, known) for b in req.backends if b.strip()]
    target = req.target_language
    if target is not None:
        target = _known_language("target_language", target, known)
    if req.target_language is not None and mode != "author":
        raise BadInput("target_language", f"applies only to --mode author (this is --mode {mode})")
    if backends and mode != "bakeoff":
        raise BadInput("backends", f"applies only to --mode bakeoff (this is --mode {mode})")
    if not Path(req.kernel_path).exists():
        raise BadInput(req.kernel_path, "no such file or directory")
    if req.dispatch == "local":
        from tasks.evaluate import precompile_jobs
        from tasks.gpu_pool import resolve

        resolve(req.pool)  # raises for ids that do not exist here
        precompile_jobs()  # raises for a BAKEOFF_PRECOMPILE_JOBS that is not a number
    # Absolute: the run records it, and `bakeoff apply` finds the input's repository by it,
    # from whatever directory (or other clone) apply is called.
    kernel_path = os.path.abspath(req.kernel_path)
    return req.model_copy(
        update={
            "mode": mode,
            "backends": backends,
            "target_language": target,
            "kernel_path": kernel_path,
        }
    )


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
