"""The roles: one module each in tasks/agents/roles/, gathered here by name.

A role module declares `ROLE = Role(...)` (the lane's two roles share a module and declare
`ROLES`): its prompt in roles/, its inputs and output models, the deterministic responder that
needs no model (tasks/agents/without_model.py) and the model-driven one that answers instead when a
model is configured. Nothing else names a role: adding one is a module there and its prompt.

The `agents` mapping (role -> "module:callable") is the one place responders are named by
string, because it arrives as a flow parameter; it wins over both of the role's own responders.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.agents.inputs import RoleInputs
from kernel_bakeoff.tasks.agents.settings import model_configured

Responder = Callable  # RoleRequest -> the output model (or a dict of it), sync or async


@dataclass(frozen=True, kw_only=True)
class Role:
    name: str
    prompt: str  # roles/<prompt>.md
    inputs: type[RoleInputs]
    output: type[BaseModel]
    responder: Responder  # deterministic: answers without a model
    model_responder: Responder | None = None  # answers instead when a model is configured
    timeout_s: float
    retries: int = 0  # the wrapper's retries, for faults; a model driver retries its own
    retry_delay_s: float = 2.0


def _gather() -> dict[str, Role]:
    from kernel_bakeoff.tasks.agents import roles  # here: every role imports the registry back

    found: dict[str, Role] = {}
    for info in sorted(pkgutil.iter_modules(roles.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{roles.__name__}.{info.name}")
        declared = getattr(module, "ROLES", None) or [module.ROLE]
        for role in declared:
            if role.name in found:
                raise RuntimeError(f"role {role.name!r} is declared twice ({info.name})")
            found[role.name] = role
    return found


def load_responder(path: str) -> Responder:
    module_name, _, attr = path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise BadInput("agents", f"cannot load responder {path!r}: {exc}") from None


def responder_for(role: str, agents: dict[str, str] | None) -> Responder:
    """The drop-in named in `agents`, else the model-driven responder when a model is
    configured, else the deterministic one."""
    spec = ROLES[role]
    if role in (agents or {}):
        return load_responder(agents[role])
    if spec.model_responder and model_configured():
        return spec.model_responder
    return spec.responder


def deterministic(role: str, agents: dict[str, str] | None) -> bool:
    """Whether the role's deterministic responder is the one that answers (no model, no drop-in
    other than it): the flows skip or say what only a model would have done."""
    return responder_for(role, agents) is ROLES[role].responder


def check_agents(agents: dict[str, str] | None) -> dict[str, str]:
    """Validate a role -> responder mapping; BadInput for unknown roles or unloadable paths."""
    agents = dict(agents or {})
    for role, path in agents.items():
        if role not in ROLES:
            raise BadInput("agents", f"unknown role {role!r}; roles: {', '.join(ROLES)}")
        load_responder(path)
    return agents


# last: a role module imports this one's names (`Role`, `deterministic`) while it loads
ROLES: dict[str, Role] = _gather()
