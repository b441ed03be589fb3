"""class: memoising on shapes. Computes once per shape and returns that answer ever after.

expect: INCORRECT_NUMERICAL
"""

import torch

_cache = {}


def rmsnorm(x, weight, eps=1e-6):
    key = tuple(x.shape)
    if key not in _cache:
        _cache[key] = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
    return _cache[key].clone()
