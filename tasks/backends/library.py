"""What the expert-kernel library backends share: run-time detection (installed? which version?
a device it runs on?), and candidates made from the traced reference's matches: the matched op
routed to the library through a small shim (`IMPL`, op_route's canonical functions), the rest of
the reference left as it is. A library kernel wrong at an unlisted size, or less precise than
the op's tolerance, is refused by the harness like any other candidate.

Libraries come in through the extras (`pip install 'kernel-bakeoff[nvidia]'` / `[amd]`), never
the default or dev dependencies: their builds pull CUDA or ROCm torch.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util

import torch

from kernel_bakeoff.tasks.backends import kernel_templates
from kernel_bakeoff.tasks.backends.base import Backend, BuildContext
from kernel_bakeoff.tasks.backends.match import Match
from kernel_bakeoff.tasks.backends.triton_templates import interpreted_allowed, matches
from kernel_bakeoff.tasks.models.plan import CandidateRef


def version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def gpu_vendor() -> str | None:
    if not torch.cuda.is_available():
        return None
    return "amd" if getattr(torch.version, "hip", None) else "nvidia"


def _last_dim_only(m: Match) -> bool:
    """The shims normalise the last dimension only: a norm over several trailing dims (its
    row longer than the last) would be left to torch by the shim, a candidate doing nothing."""
    last = max((s[-1] for s in m.shapes.values() if s), default=None)
    return m.params.get("row", last) == last


class Library(Backend):
    """Subclasses set: name, dist (the PyPI name), module (its import name), vendors it runs on,
    ops (the op classes its shim takes), IMPL (the shim's source), and whether its kernels run
    under Triton's CPU interpreter."""

    language = "library"
    dist = ""
    module = ""
    vendors: tuple[str, ...] = ("nvidia",)
    ops: tuple[str, ...] = ()
    interpreter = False
    IMPL = ""

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec(self.module) is None:
            extra = "amd" if self.vendors == ("amd",) else "nvidia"
            return f"{self.dist} is not installed (pip install 'kernel-bakeoff[{extra}]')"
        vendor = gpu_vendor()
        if vendor is None:
            if self.interpreter and interpreted_allowed():
                return None
            return f"{self.dist} runs on a GPU ({', '.join(self.vendors)}); none here"
        if vendor not in self.vendors:
            return f"{self.dist} runs on {', '.join(self.vendors)} GPUs, not {vendor}"
        return self.device_reason()

    def device_reason(self) -> str | None:
        """A further requirement of the device (an architecture), None when met."""
        return None

    @property
    def version(self) -> str:
        return version(self.dist) or "unknown version"

    def origin(self, what: str) -> str:
        return f"{self.dist} {self.version}: {what}"

    def covered(self, found: list[Match]) -> list[Match]:
        return [m for m in found if m.op in self.ops and _last_dim_only(m) and self.takes(m)]

    def takes(self, match: Match) -> bool:
        """Whether the shim takes this match (a dtype or option it lacks: no)."""
        return True

    def candidates(self, ctx: BuildContext) -> list[CandidateRef]:

        entry, found, notes = matches(ctx)
        mine = self.covered(found)
        self._why = (
            None
            if mine
            else f"covers {', '.join(self.ops)}; the trace matched "
            + (", ".join(m.label for m in found) or "none of them")
            + (f" ({'; '.join(notes)})" if notes else "")
        )
        out = []
        for m in mine:
            digest = hashlib.sha256(f"{self.name}{m.label}{m.how}".encode()).hexdigest()[:8]
            name = f"{self.name}-{m.label}-{digest}"
            origin = self.origin(m.label)
            path = kernel_templates.place(ctx, entry, m, name, self.IMPL, origin)
            out.append(
                CandidateRef(
                    name=name,
                    language=self.language,
                    mode="optimize",
                    path=str(path),
                    origin=origin,
                    params={"library": self.dist, "version": self.version, "match": m.label},
                )
            )
        return out

    def nothing_reason(self, ctx: BuildContext) -> str | None:
        return getattr(self, "_why", None)
