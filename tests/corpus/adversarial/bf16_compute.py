"""class: precision below the op's contract. Computes an fp32 op in bfloat16.

expect: INCORRECT_NUMERICAL
"""

import torch


def rmsnorm(x, weight, eps=1e-6):
    xb, wb = x.bfloat16(), weight.bfloat16()
    return (xb * torch.rsqrt(xb.pow(2).mean(dim=-1, keepdim=True) + eps) * wb).float()
