"""CUDA C++ compiled at run time (load_inline / nvrtc): `#define` and launch-parameter search over
the incumbent's sources. Needs a CUDA build of torch, a CUDA device and nvcc."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch

from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.backends import cpp_defines
from kernel_bakeoff.tasks.backends.base import Backend, BuildContext
from kernel_bakeoff.tasks.backends.source import cpp_dialect


def find_nvcc() -> str | None:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").is_file():
        return str(Path(home) / "bin" / "nvcc")
    return shutil.which("nvcc")


class CudaCpp(Backend):
    name = "cuda"
    language = "cuda"
    lane = True

    def unavailable_reason(self) -> str | None:
        if torch.version.hip:
            return "torch is a ROCm build: CUDA C++ needs a CUDA build"
        if not torch.version.cuda:
            return "torch is a CPU build: CUDA C++ needs a CUDA build"
        if not torch.cuda.is_available():
            return "no CUDA device is visible"
        if find_nvcc() is None:
            return "nvcc not found (set CUDA_HOME or put nvcc on PATH)"
        return None

    def cannot_build(self, spec: OpSpec) -> str | None:
        if spec.language != "cuda":
            return (
                f"the frozen entry is {spec.language}, not CUDA C++: an author lane may write one"
            )
        return None

    def implementation(self, ctx: BuildContext, source: Path | None = None) -> str | None:
        return ctx.spec.entry if cpp_dialect(source or ctx.baseline_src) == "cuda" else None

    def tunable(self, ctx: BuildContext, source: Path | None = None):
        if self.implementation(ctx, source) is None:
            return None
        return cpp_defines.tunable(ctx, self.language, self.name, source)


BACKEND = CudaCpp()
