"""Triton: the incumbent kernel's own configuration space (block sizes, warps, stages, and on AMD
waves_per_eu / matrix_instr_nonkdim / kpack where legal), each point a generated candidate that
calls the frozen entry with that configuration."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.backends import triton_surface, triton_templates, wrappers
from kernel_bakeoff.tasks.backends.base import Backend, BuildContext, write_candidate
from kernel_bakeoff.tasks.backends.source import symbol_kind, uses_triton
from kernel_bakeoff.tasks.models.plan import CandidateRef
from kernel_bakeoff.tasks.search.space import Tunable, key


def config_name(config: dict) -> str:
    shown = "_".join(f"{k.split(':')[-1].split('.')[-1]}{v}" for k, v in config.items() if v)
    digest = hashlib.sha256(key(config).encode()).hexdigest()[:8]
    return f"triton-{shown[:60]}-{digest}" if shown else f"triton-{digest}"


class TritonConfigs(Backend):
    name = "triton"
    language = "triton"
    lane = True

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("triton") is None:
            return "triton is not installed"
        return None

    def cannot_build(self, spec: OpSpec) -> str | None:
        if spec.language != "triton":
            return f"the frozen entry is {spec.language}, not Triton: an author lane may write one"
        return None

    def implementation(self, ctx: BuildContext, source: Path | None = None) -> str | None:
        src = Path(source or ctx.baseline_src)
        path = src / ctx.entry_file
        if path.is_file() and uses_triton(path) and symbol_kind(path, ctx.entry_symbol):
            return ctx.spec.entry
        if source is None and ctx.spec.language != "triton":  # a torch op: a traced template
            return triton_templates.describe(ctx)
        return None

    def tunable(self, ctx: BuildContext, source: Path | None = None) -> Tunable | None:
        if source is None and ctx.spec.language != "triton":
            return triton_templates.tunable(ctx)
        entry = self.implementation(ctx, source)
        if (
            entry is None
            or symbol_kind(Path(source or ctx.baseline_src) / ctx.entry_file, ctx.entry_symbol)
            != "function"
        ):
            return None
        surface = triton_surface.discover_isolated(Path(source or ctx.baseline_src), entry)
        if surface is None:
            return None
        space, defaults = triton_surface.space(surface, ctx.arch)
        if not space.params:
            return None

        def build(config: dict) -> CandidateRef:
            kwargs, launch, pins = triton_surface.split(config)
            name = config_name(config)
            text = wrappers.triton_config(ctx, entry, kwargs, launch, pins, self.name)
            path = write_candidate(ctx, name, text, src=source)
            return CandidateRef(
                name=name,
                language=self.language,
                mode="optimize" if source is None else "author",
                path=str(path),
                origin=f"{self.name} search",
                params=config,
            )

        return Tunable(space, build, defaults, language=self.language, origin=self.name)


BACKEND = TritonConfigs()
