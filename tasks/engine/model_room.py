"""Where the model's room is reached from, by name: the one door between a run and the agents
(tasks/agents). A run without a model, and without an operator's drop-in, never passes it, so
it never imports that room; this module itself imports nothing of it, nor anything heavy, so
the flows and the `bakeoff` command may ask `by_model` at no cost.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from kernel_bakeoff.tasks.run.key import model_configured

# The model's room, by name: its adapters ask a role through Prefect (prompt, timeout,
# retries, transcript) and answer in the engine's terms.
MODEL_ROOM = "kernel_bakeoff.tasks.agents.proposing"


# The roles a configured model answers; Discover's planner has no model of its own (a drop-in
# may still answer it).
MODEL_ROLES = ("optimizer", "author", "reviewer", "op_benchmarker", "reporter")


def by_model(role: str, agents: dict[str, str] | None) -> bool:
    """Whether the model's room answers `role`: a drop-in is named for it, or a model is set
    and answers such a role."""
    return role in (agents or {}) or (role in MODEL_ROLES and model_configured())


def identity() -> str | None:
    """Which model drives the lanes here, for their cache keys (None: none)."""
    return model_room("identity")() if model_configured() else None


def model_room(name: str) -> Callable:
    """One of the model room's adapters, imported only when a model or a drop-in answers."""
    return getattr(importlib.import_module(MODEL_ROOM), name)
