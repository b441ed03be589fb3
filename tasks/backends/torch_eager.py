"""Plain torch, run eagerly: the op's own torch reference as a candidate in its own right."""

from __future__ import annotations

from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.backends import wrappers
from kernel_bakeoff.tasks.backends.base import Backend, BuildContext, write_candidate
from kernel_bakeoff.tasks.backends.source import torch_entry
from kernel_bakeoff.tasks.models.plan import CandidateRef


class TorchEager(Backend):
    name = "torch-eager"
    language = "torch"

    def cannot_build(self, spec: OpSpec) -> str | None:
        return None  # decided per task: see candidates()

    def candidates(self, ctx: BuildContext) -> list[CandidateRef]:
        entry = torch_entry(ctx.spec, ctx.baseline_src)
        if entry is None or entry == ctx.spec.entry:
            return []  # no torch code, or the frozen entry is eager torch: the baseline itself
        path = write_candidate(ctx, "torch-eager", wrappers.reexport(ctx, entry, self.name))
        return [
            CandidateRef(
                name="torch-eager",
                language=self.language,
                mode="optimize",
                path=str(path),
                origin=self.name,
                params={"source": entry},
            )
        ]


BACKEND = TorchEager()
