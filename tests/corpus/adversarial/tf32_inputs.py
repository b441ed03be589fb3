"""class: precision below the op's contract. Rounds the inputs to TF32's 10-bit mantissa (what
TF32 tensor-core math does to an fp32 operand) before computing.

expect: INCORRECT_NUMERICAL
"""

import torch


def _tf32(t):
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def rmsnorm(x, weight, eps=1e-6):
    x, weight = _tf32(x), _tf32(weight)
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
