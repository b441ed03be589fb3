"""Honest: works on the transposed problem and returns a non-contiguous (transposed) view."""

import torch


def rmsnorm(x, weight, eps=1e-6):
    xt = x.t().contiguous()  # (H, T)
    scale = torch.rsqrt(xt.pow(2).mean(dim=0, keepdim=True) + eps)
    out_t = xt * scale * weight[:, None]
    return out_t.t()  # right shape and values, column-major layout
