"""Route an op's bf16/fp16 GEMMs to aiter's tuned GEMM, or record them; self-contained, so an
aiter candidate carries a copy beside its wrapper.

A call is routed when it is `F.linear(x, w, bias)`, or a matmul/mm whose right operand is the
transpose of a contiguous [N, K] weight (aiter's layout), with x and w of one 16-bit dtype.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

ROUTED_DTYPES = (torch.bfloat16, torch.float16)
_MATMULS = (torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.mm)


def linear_operands(func, args, kwargs):
    """(x, w, bias) in F.linear form when the call is a GEMM aiter can take, else None."""
    if func is F.linear:
        x, w = args[0], args[1]
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
    elif func in _MATMULS and not kwargs and len(args) == 2:
        x, b = args
        if not isinstance(b, torch.Tensor) or b.dim() != 2:
            return None
        w, bias = b.t(), None
        if not w.is_contiguous():
            return None
    else:
        return None
    if not (isinstance(x, torch.Tensor) and isinstance(w, torch.Tensor)):
        return None
    if x.dtype not in ROUTED_DTYPES or w.dtype != x.dtype or x.dim() < 2 or w.dim() != 2:
        return None
    if bias is not None and bias.dtype != x.dtype:
        return None
    return x, w, bias


def gemm_shape(x, w, bias) -> dict:
    """A row of aiter's untuned bf16 GEMM CSV for this call."""
    return {
        "M": math.prod(x.shape[:-1]),
        "N": w.shape[0],
        "K": x.shape[-1],
        "bias": bias is not None,
        "dtype": str(x.dtype),
        "outdtype": str(x.dtype),
        "scaleAB": False,
        "bpreshuffle": False,
    }


class AiterGemm(TorchFunctionMode):
    """Run routed GEMMs through aiter.tuned_gemm.tgemm.mm (which reads AITER_CONFIG_GEMM_BF16)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        ops = linear_operands(func, args, kwargs)
        if ops is None:
            return func(*args, **kwargs)
        from aiter.tuned_gemm import tgemm

        return tgemm.mm(*ops)


class RecordGemms(TorchFunctionMode):
    """Record the routed GEMMs an op makes (works on meta tensors: nothing is computed)."""

    def __init__(self):
        super().__init__()
        self.shapes: list[dict] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        ops = linear_operands(func, args, kwargs)
        if ops is not None:
            self.shapes.append(gemm_shape(*ops))
        return func(*args, **kwargs)
