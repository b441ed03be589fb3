"""FlagGems (`flag-gems`; Triton implementations of many ATen ops; NVIDIA, and AMD through
Triton): a whole-module substitution, the reference run under `flag_gems.use_gems()`, which
registers its kernels for the ATen ops it covers while the block runs. No match is needed; ops
it does not cover stay ATen's. It needs a GPU even to import (it looks for a device then)."""

from __future__ import annotations

import hashlib

from kernel_bakeoff.tasks.backends import wrappers
from kernel_bakeoff.tasks.backends.base import BuildContext, write_candidate
from kernel_bakeoff.tasks.backends.library import Library
from kernel_bakeoff.tasks.backends.source import torch_entry
from kernel_bakeoff.tasks.models.plan import CandidateRef

MODE = '''"""FlagGems' scoped substitution as the context a candidate's wrapper enters."""

import flag_gems

Gems = flag_gems.use_gems
'''


class FlagGems(Library):
    name = "flag-gems"
    dist = "flag-gems"
    module = "flag_gems"
    vendors = ("nvidia", "amd")

    def candidates(self, ctx: BuildContext) -> list[CandidateRef]:
        entry = torch_entry(ctx.spec, ctx.baseline_src)
        if entry is None:
            self._why = "no plain-torch entry or reference to run under it"
            return []
        origin = self.origin("use_gems() over the whole reference")
        digest = hashlib.sha256(entry.encode()).hexdigest()[:8]
        name = f"flag-gems-{digest}"
        path = write_candidate(
            ctx, name, wrappers.routed(ctx, entry, "gems_mode.py", "Gems", origin)
        )
        (path / "gems_mode.py").write_text(MODE)
        return [
            CandidateRef(
                name=name,
                language=self.language,
                mode="optimize",
                path=str(path),
                origin=origin,
                params={"library": self.dist, "version": self.version, "whole": True},
            )
        ]


BACKEND = FlagGems()
