"""class: memoising on values. Keys its cache on a cheap summary of the input values (the rounded
mean magnitude), which cannot tell one random draw from another.

expect: INCORRECT_NUMERICAL
"""

import torch

_cache = {}


def rmsnorm(x, weight, eps=1e-6):
    key = (tuple(x.shape), round(float(x.abs().mean()), 1), round(float(weight.mean()), 1))
    if key not in _cache:
        _cache[key] = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
    return _cache[key].clone()
