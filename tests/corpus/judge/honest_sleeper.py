"""Honest and slow: sleeps 3 ms in every call and says so in its timings (the judge's own clock
must not take it for a forger)."""

import time

import torch


def rmsnorm(x, weight, eps=1e-6):
    time.sleep(0.003)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
