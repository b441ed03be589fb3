"""examples/rmsnorm_torch through torch.compile (default mode): a candidate that compiles on every check."""

import torch


def _impl(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


rmsnorm = torch.compile(_impl)
