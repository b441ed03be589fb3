"""Honest: prints to stdout and stderr while it is called. (It returned its one output inside a
tuple; the reference returns a bare tensor, and that is now a structure mismatch,
INCORRECT_SHAPE: tests/test_oracle_probe.py.)"""

import sys

import torch

calls = 0


def rmsnorm(x, weight, eps=1e-6):
    global calls
    calls += 1
    if calls % 50 == 1:
        print(f"rmsnorm call {calls}: {tuple(x.shape)}")
        print("progress to stderr", file=sys.stderr)
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
