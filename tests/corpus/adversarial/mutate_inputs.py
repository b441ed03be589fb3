"""class: mutating inputs. Normalises x in place and returns it (no output allocation).

expect: FLAGGED
"""

import torch


def rmsnorm(x, weight, eps=1e-6):
    return x.mul_(torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)).mul_(weight)
