"""Honest: computes in float64 and rounds once to float32 (differs from the reference by rounding)."""

import torch


def rmsnorm(x, weight, eps=1e-6):
    x64 = x.double()
    scale = torch.rsqrt(x64.square().sum(dim=-1, keepdim=True) / x.shape[-1] + eps)
    return (x64 * scale * weight.double()).float()
