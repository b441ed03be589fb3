"""Helion (`helion`; NVIDIA and AMD through Triton): its kernels are written in its own
tile language and tuned by its own autotuner on their first call (effort from
HELION_AUTOTUNE_EFFORT, "quick" unless set). The package ships the language, not an op library,
so the kernels are ours: softmax and RMSNorm over the last dimension. On a CPU they run under
HELION_INTERPRET=1, which executes the kernel body as torch operations (a check of the kernel's
logic, not of generated code)."""

from __future__ import annotations

import os

from kernel_bakeoff.tasks.backends.library import Library, gpu_vendor
from kernel_bakeoff.tasks.run.settings import current

IMPL = '''"""Helion kernels behind op_route's canonical functions (None: left to torch)."""

import os

import helion
import helion.language as hl
import torch

_EFFORT = os.environ.get("HELION_AUTOTUNE_EFFORT", "quick")
_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


@helion.kernel(autotune_effort=_EFFORT)
def _softmax(x: torch.Tensor) -> torch.Tensor:
    rows, _ = x.size()
    out = torch.empty_like(x)
    for tile in hl.tile(rows):
        out[tile, :] = torch.softmax(x[tile, :].to(torch.float32), dim=1).to(out.dtype)
    return out


@helion.kernel(autotune_effort=_EFFORT)
def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    rows, cols = x.size()
    out = torch.empty_like(x)
    for tile in hl.tile(rows):
        row = x[tile, :].to(torch.float32)
        rstd = torch.rsqrt(torch.mean(row * row, dim=-1) + eps)
        out[tile, :] = (row * rstd[:, None] * weight[:].to(torch.float32)).to(out.dtype)
    return out


def softmax(x, dim):
    if x.dim() == 0 or dim % x.dim() != x.dim() - 1 or x.dtype not in _FLOATS:
        return None
    return _softmax(x.reshape(-1, x.shape[-1]).contiguous()).reshape(x.shape)


def rms_norm(x, shape, weight, eps):
    if weight is None or len(shape) != 1 or x.dtype not in _FLOATS or weight.dtype != x.dtype:
        return None
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    y = _rms_norm(x.reshape(-1, x.shape[-1]).contiguous(), weight, float(eps))
    return y.reshape(x.shape)
'''


class Helion(Library):
    name = "helion"
    dist = "helion"
    module = "helion"
    vendors = ("nvidia", "amd")
    ops = ("softmax", "rms_norm")
    IMPL = IMPL

    def unavailable_reason(self) -> str | None:
        opted = current().interpreted_templates  # BAKEOFF_INTERPRETED_TEMPLATES
        if gpu_vendor() is None and os.environ.get("HELION_INTERPRET") == "1" and opted:
            import importlib.util

            return None if importlib.util.find_spec("helion") else super().unavailable_reason()
        return super().unavailable_reason()


BACKEND = Helion()
