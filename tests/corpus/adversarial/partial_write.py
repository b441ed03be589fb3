"""class: partial writes. Computes only the first half of the rows.

expect: INCORRECT_NUMERICAL
"""

import torch


def rmsnorm(x, weight, eps=1e-6):
    out = torch.empty_like(x)
    half = x.shape[0] // 2
    xs = x[:half]
    out[:half] = xs * torch.rsqrt(xs.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
    return out
