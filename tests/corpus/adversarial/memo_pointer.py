"""class: memoising on pointers. Answers from a cache keyed on the inputs' addresses.

expect: INCORRECT_NUMERICAL
"""

import torch

_cache = {}


def rmsnorm(x, weight, eps=1e-6):
    key = (x.data_ptr(), weight.data_ptr())
    if key not in _cache:
        _cache[key] = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
    return _cache[key]
