"""torch.compile over the op's plain-torch implementation: three named modes for Discover, and a
space for the torch search lane: mode x coordinate-descent tuning x Inductor's own knobs
(tasks/backends/inductor_knobs.py)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from pathlib import Path

import torch

from kernel_bakeoff.tasks.backends import inductor_knobs, wrappers
from kernel_bakeoff.tasks.backends.base import Backend, BuildContext, write_candidate
from kernel_bakeoff.tasks.backends.source import torch_entry
from kernel_bakeoff.tasks.models.plan import CandidateRef
from kernel_bakeoff.tasks.search.space import Param, Space, Tunable

# Discover's three: what a person would try first.
DISCOVER_MODES = {
    "torch-compile-default": {},
    "torch-compile-max-autotune": {"mode": "max-autotune"},
    "torch-compile-coordinate-descent": {"options": {"coordinate_descent_tuning": True}},
}
_MODE_OPTIONS = {
    "default": {},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True},
}


def compile_kwargs(config: dict) -> dict:
    """torch.compile keyword arguments for a point of the search space. torch.compile takes a
    mode or options, not both: with any Inductor knob set, the mode becomes its options."""
    knobs = inductor_knobs.options(config)
    if not config["coordinate_descent"] and not knobs:
        mode = config["mode"]
        return {} if mode == "default" else {"mode": mode}
    options = {**_MODE_OPTIONS[config["mode"]], **knobs}
    if config["coordinate_descent"]:
        options["coordinate_descent_tuning"] = True
    return {"options": options}


def lane_name(config: dict) -> str:
    name = f"torch-compile-{config['mode']}" + ("-cd" if config["coordinate_descent"] else "")
    knobs = inductor_knobs.options(config)
    if knobs:
        digest = hashlib.sha256(json.dumps(knobs, sort_keys=True).encode()).hexdigest()[:8]
        name += f"-knobs-{digest}"
    return name


class TorchCompile(Backend):
    name = "torch-compile"
    language = "torch"
    lane = True

    def unavailable_reason(self) -> str | None:
        if not hasattr(torch, "compile"):
            return f"torch {torch.__version__} has no torch.compile"
        if torch.cuda.is_available():
            if importlib.util.find_spec("triton") is None:
                return "torch.compile on a GPU needs triton, which is not installed"
        elif not (shutil.which("g++") or shutil.which("clang++")):
            return "torch.compile on the CPU needs a C++ compiler (g++ or clang++)"
        return None

    def implementation(self, ctx: BuildContext) -> str | None:
        return torch_entry(ctx.spec, ctx.baseline_src)

    def candidates(self, ctx: BuildContext) -> list[CandidateRef]:
        entry = self.implementation(ctx)
        if entry is None:
            return []
        out = []
        for name, kwargs in DISCOVER_MODES.items():
            path = write_candidate(ctx, name, wrappers.compiled(ctx, entry, kwargs, self.name))
            out.append(
                CandidateRef(
                    name=name,
                    language=self.language,
                    mode="optimize",
                    path=str(path),
                    origin=self.name,
                    params={"source": entry, "compile": kwargs},
                )
            )
        return out

    def tunable(self, ctx: BuildContext, source: Path | None = None) -> Tunable | None:
        entry = self.implementation(ctx)
        if entry is None:
            return None
        space = Space(
            [
                Param("mode", tuple(_MODE_OPTIONS)),
                Param("coordinate_descent", (False, True)),
                *inductor_knobs.params(),
            ],
            inductor_knobs.invalid,
        )

        def build(config: dict) -> CandidateRef:
            name = lane_name(config)
            kwargs = compile_kwargs(config)
            path = write_candidate(ctx, name, wrappers.compiled(ctx, entry, kwargs, self.name))
            return CandidateRef(
                name=name,
                language=self.language,
                mode="optimize",
                path=str(path),
                origin=f"{self.name} search {kwargs or 'default'}",
                params={**config, "source": entry},
            )

        default = {"mode": "default", "coordinate_descent": False, **inductor_knobs.defaults()}
        return Tunable(space, build, [default], language=self.language, origin=self.name)


BACKEND = TorchCompile()
