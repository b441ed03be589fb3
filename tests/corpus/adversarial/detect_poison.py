"""class: detecting which call is checked. Honest only while deterministic algorithms are on
(which is how this harness poisons fresh allocations in its checked trials).

expect: INCORRECT_NUMERICAL
"""

import torch


def rmsnorm(x, weight, eps=1e-6):
    if not torch.are_deterministic_algorithms_enabled():
        return torch.zeros_like(x)
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
