"""class: processes that finish after the timed region. Forks a process that writes the answer
into shared memory after the call has returned.

expect: INCORRECT_NUMERICAL|FLAGGED
"""

import os
import time

import torch


def rmsnorm(x, weight, eps=1e-6):
    out = torch.empty_like(x).share_memory_()
    if os.fork() == 0:
        time.sleep(0.002)
        out.copy_(x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight)
        os._exit(0)
    return out
