"""Replaces Triton's launch path with one that does nothing, then "launches" its kernel: a
recorder that wrapped the replacement would name a kernel that never ran."""

import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction


@triton.jit
def _softmax_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass


def _nothing(self, *args, grid, warmup, **kwargs):
    return None


for _cls in (JITFunction, InterpretedFunction):
    _cls.run = _nothing


def softmax(x):
    y = torch.softmax(x, dim=-1)
    _softmax_rows[(1,)](x, y, x.numel(), BLOCK=16)
    return y
