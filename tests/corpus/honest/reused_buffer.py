"""Honest: writes every element of one preallocated output buffer per shape and returns it."""

import torch

_buffers = {}


def rmsnorm(x, weight, eps=1e-6):
    key = (tuple(x.shape), x.dtype, x.device)
    if key not in _buffers:
        _buffers[key] = torch.empty_like(x)
    out = _buffers[key]
    torch.mul(x, torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps), out=out)
    out.mul_(weight)
    return out
