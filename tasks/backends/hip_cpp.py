"""HIP C++ through hip-python (hiprtc compile, module load, launch) on ROCm: `#define` and
launch-parameter search over the incumbent's sources; `hip_launch.py` is the runtime a HIP
candidate uses and is copied beside every HIP candidate this backend writes."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.backends import cpp_defines
from kernel_bakeoff.tasks.backends.base import Backend, BuildContext
from kernel_bakeoff.tasks.backends.source import cpp_dialect

LAUNCHER = Path(__file__).with_name("hip_launch.py")


def probe_hip(hip_module=None) -> str | None:
    """None when hip-python can reach a device, else why not. hip-python imports without ROCm;
    its calls then fail (RuntimeError: failed to dlopen libamdhip64.so)."""
    if hip_module is None:
        try:
            from hip import hip as hip_module
        except ImportError as exc:
            return f"hip-python is not installed ({exc.name or exc})"
    try:
        result = hip_module.hipGetDeviceCount()
    except Exception as exc:  # the bindings raise when the HIP runtime library is missing
        return f"hip-python cannot reach the HIP runtime: {exc}"
    err, count = result[0], (result[1] if len(result) > 1 else 0)
    if getattr(err, "value", err) != 0:
        return f"hipGetDeviceCount failed: {err}"
    if not count:
        return "hip-python sees no HIP device"
    return None


class HipCpp(Backend):
    name = "hip"
    language = "hip"
    lane = True

    def __init__(self, hip_module=None):
        self._hip = hip_module

    def unavailable_reason(self) -> str | None:
        if not torch.version.hip:
            return "torch is not a ROCm build: HIP C++ runs on ROCm only"
        return probe_hip(self._hip)

    def cannot_build(self, spec: OpSpec) -> str | None:
        if spec.language != "hip":
            return f"the frozen entry is {spec.language}, not HIP C++: an author lane may write one"
        return None

    def implementation(self, ctx: BuildContext, source: Path | None = None) -> str | None:
        return ctx.spec.entry if cpp_dialect(source or ctx.baseline_src) == "hip" else None

    def tunable(self, ctx: BuildContext, source: Path | None = None):
        if self.implementation(ctx, source) is None:
            return None
        inner = cpp_defines.tunable(ctx, self.language, self.name, source)
        if inner is None:
            return None
        build = inner.build

        def build_with_launcher(config: dict):
            ref = build(config)
            shutil.copy2(LAUNCHER, Path(ref.path) / LAUNCHER.name)
            return ref

        inner.build = build_with_launcher
        return inner


BACKEND = HipCpp()
