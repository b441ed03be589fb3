"""class: detecting which call is checked. Honest for the first calls (where a harness usually
checks), then returns zeros.

expect: INCORRECT_NUMERICAL
"""

import torch

calls = 0


def rmsnorm(x, weight, eps=1e-6):
    global calls
    calls += 1
    if calls > 3:
        return torch.zeros_like(x)
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
