"""Honest: the same work on a side stream, joined to the caller's stream before returning.

expect: PASSED
"""

import torch

_side = {}


def rmsnorm(x, weight, eps=1e-6):
    current = torch.cuda.current_stream(x.device)
    side = _side.setdefault(x.device, torch.cuda.Stream(device=x.device))
    out = torch.empty_like(x)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        torch.mul(x, torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps), out=out)
        out.mul_(weight)
    current.wait_stream(side)
    out.record_stream(side)
    return out
