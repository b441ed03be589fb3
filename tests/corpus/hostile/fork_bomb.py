"""class: no resource bounds (processes). Forks sleeping children until the kernel refuses,
up to 2000, and says how many it made; computes honestly.
Outcome: the box's process bound stops it far below (or the box is killed at the bound), and
no child outlives the check.
"""

import os

import torch

children = 0
try:
    for _ in range(2000):
        if os.fork() == 0:  # named by the test's token, so it can look for survivors
            os.execv("/bin/sh", ["sh", "-c", "sleep 600", os.environ["HOSTILE_NAME"]])
        children += 1
except OSError as exc:
    print("fork refused:", exc)
print("FORKED", children, flush=True)


def rmsnorm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
