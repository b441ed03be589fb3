"""Triton kernel templates for a torch op, chosen by tracing it (no model): Discover gets one
candidate per matched op at the template's default configuration, and the Triton search lane
tunes the main match's template when the frozen op has no Triton of its own."""

from __future__ import annotations

import importlib.util
import os

import torch

from kernel_bakeoff.tasks.backends import kernel_templates
from kernel_bakeoff.tasks.backends.base import Backend, BuildContext
from kernel_bakeoff.tasks.backends.match import Match, find
from kernel_bakeoff.tasks.backends.source import torch_entry
from kernel_bakeoff.tasks.backends.trace import trace_isolated
from kernel_bakeoff.tasks.models.plan import CandidateRef
from kernel_bakeoff.tasks.run.settings import current

NAME = "triton-templates"


CPU_OPT_IN = "BAKEOFF_INTERPRETED_TEMPLATES"


def interpreted_allowed() -> bool:
    """On the CPU, templates and interpreted library kernels are candidates only when asked for:
    the interpreter's times are not comparable with native code, and at the sizes of a real op
    it runs for minutes a check (a CLI bake-off of examples/rmsnorm_torch passed 600 s)."""
    return os.environ.get("TRITON_INTERPRET") == "1" and current().interpreted_templates


def triton_runs_here() -> str | None:
    """None when Triton kernels can run on this box, else why not."""
    if importlib.util.find_spec("triton") is None:
        return "triton is not installed"
    if not torch.cuda.is_available() and not interpreted_allowed():
        return f"Triton kernels need a GPU (or TRITON_INTERPRET=1 and {CPU_OPT_IN}=1 on the CPU)"
    return None


def matches(ctx: BuildContext) -> tuple[str | None, list[Match], list[str]]:
    """(the traced torch entry, its matches, notes on what did not match), from one trace."""
    entry = torch_entry(ctx.spec, ctx.baseline_src)
    if entry is None:
        return None, [], ["no plain-torch entry or reference to trace"]
    found, notes = find(trace_isolated(ctx, entry))
    return entry, found, notes


def templated(found: list[Match]) -> list[Match]:
    """The matches a template exists for (a fused linear + cross-entropy is a library's only)."""
    return [m for m in found if m.op in kernel_templates.TEMPLATE]


def main_match(found: list[Match]) -> Match | None:
    """The match a lane tunes: a GEMM or convolution (the compute) when there is one, else the
    first."""
    found = templated(found)
    return next(
        (m for m in found if m.op in ("linear", "matmul", "conv")), found[0] if found else None
    )


class TritonTemplates(Backend):
    name = NAME
    language = "triton"

    def unavailable_reason(self) -> str | None:
        return triton_runs_here()

    def candidates(self, ctx: BuildContext) -> list[CandidateRef]:
        entry, found, notes = matches(ctx)
        found = templated(found)
        self._notes = notes
        out = []
        routed = [m for m in found if m.how == "route"]
        if any(m.op == "conv" for m in routed):  # one route a convolution: the template's
            routed = [m for m in routed if m.op != "conv_epilogue"]
        if len(routed) > 1:  # besides one candidate per match: all of them at once
            labels = " + ".join(m.label for m in routed)
            who = f"{NAME} every match at its default ({labels})"
            out.append(kernel_templates.build_all(ctx, entry, routed, who))
        for m in found:
            _, default = kernel_templates.space(m, ctx.arch.vendor)
            out.append(
                kernel_templates.build(
                    ctx, entry, m, default, kernel_templates.describe(NAME, m, default)
                )
            )
        return out

    def nothing_reason(self, ctx: BuildContext) -> str | None:
        notes = getattr(self, "_notes", [])
        return "no template matches: " + "; ".join(notes) if notes else None


def tunable(ctx: BuildContext):
    """The main match's template space (for the Triton lane on a torch op), or None."""
    if triton_runs_here() is not None:
        return None
    try:
        entry, found, _ = matches(ctx)
    except Exception:  # a reference the sandbox cannot trace has nothing to tune here
        return None
    m = main_match(found)
    if m is None:
        return None
    return kernel_templates.tunable(ctx, entry, m, f"{NAME} search")


def describe(ctx: BuildContext) -> str | None:
    """Where the Triton lane's implementation comes from when it is a template, else None."""
    if triton_runs_here() is not None:
        return None
    try:
        _, found, _ = matches(ctx)
    except Exception:  # a reference the sandbox cannot trace has no template
        return None
    m = main_match(found)
    if m is None:
        return None
    return f"template {kernel_templates.TEMPLATE[m.op]} for the traced {m.label} ({m.dtype})"


BACKEND = TritonTemplates()
