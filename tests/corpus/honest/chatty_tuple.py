"""Honest: prints on every call and returns its one output inside a tuple."""

import sys

import torch

calls = 0


def rmsnorm(x, weight, eps=1e-6):
    global calls
    calls += 1
    if calls % 50 == 1:
        print(f"rmsnorm call {calls}: {tuple(x.shape)}")
        print("progress to stderr", file=sys.stderr)
    return (x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight,)
