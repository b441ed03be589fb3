"""class: patched timers. Replaces the clocks a harness would read so that every call looks free.

expect: FLAGGED
"""

import time

import torch

time.perf_counter = lambda: 0.0
time.perf_counter_ns = lambda: 0
if torch.cuda.is_available():
    torch.cuda.Event.elapsed_time = lambda self, other: 1e-6


def rmsnorm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
