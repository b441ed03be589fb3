"""The backend registry: one small module per way of producing candidates for an op.

Each backend says whether this box can run it (`is_available`, with a reason when not), whether
it has anything for a given op (`can_build`), the candidates it proposes to Discover, and for
lane languages the configuration space a search lane tunes. Unavailable backends are reported
as `BackendStatus(available=False, reason=...)`, never raised.
"""

from __future__ import annotations

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.backends import (
    aiter_gemm,
    cuda_cpp,
    hip_cpp,
    lib_aiter_ops,
    lib_flag_gems,
    lib_flashinfer,
    lib_helion,
    lib_liger,
    lib_quack,
    torch_compile,
    torch_eager,
    triton_templates,
    triton_tune,
    tunableop,
)
from kernel_bakeoff.tasks.backends.base import Backend
from kernel_bakeoff.tasks.models.plan import BackendStatus

BACKENDS: list[Backend] = [
    torch_eager.BACKEND,
    torch_compile.BACKEND,
    tunableop.BACKEND,
    triton_tune.BACKEND,
    triton_templates.BACKEND,
    cuda_cpp.BACKEND,
    hip_cpp.BACKEND,
    aiter_gemm.BACKEND,
    lib_liger.BACKEND,
    lib_flag_gems.BACKEND,
    lib_quack.BACKEND,
    lib_flashinfer.BACKEND,
    lib_helion.BACKEND,
    lib_aiter_ops.BACKEND,
]


def names() -> list[str]:
    return [b.name for b in BACKENDS]


def get(name: str) -> Backend:
    for b in BACKENDS:
        if b.name == name:
            return b
    raise BadInput("backends", f"unknown backend {name!r} (one of {', '.join(names())})")


def select(requested: list[str] | None) -> list[Backend]:
    """Backends by name or language (all when None), in registry order."""
    if requested is None:
        return list(BACKENDS)
    wanted = {r.strip().lower() for r in requested if r.strip()}
    known = set(names()) | {b.language for b in BACKENDS}
    unknown = sorted(wanted - known)
    if unknown:
        raise BadInput("backends", f"unknown backend or language {unknown[0]!r}")
    return [b for b in BACKENDS if b.name in wanted or b.language in wanted]


def statuses(spec: OpSpec | None = None, backends: list[Backend] | None = None):
    return [b.status(spec) for b in (backends or BACKENDS)]


def lane_backend(language: str) -> Backend | None:
    """The backend that owns a search space for a lane language."""
    for b in BACKENDS:
        if b.lane and b.language == language:
            return b
    return None


def languages(available_only: bool = True) -> list[str]:
    """Lane languages (those a search or author lane can work in), available on this box."""
    out = []
    for b in BACKENDS:
        if b.lane and b.language not in out and (not available_only or b.is_available()):
            out.append(b.language)
    return out


__all__ = ["BACKENDS", "BackendStatus", "get", "languages", "lane_backend", "select", "statuses"]
