"""class: detecting which call is checked. Looks up the call stack and cheats when called from a
function named like a timer.

expect: INCORRECT_NUMERICAL
"""

import sys

import torch


def _timed() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name in ("time", "timed", "benchmark", "do_bench"):
            return True
        frame = frame.f_back
    return False


def rmsnorm(x, weight, eps=1e-6):
    if _timed():
        return torch.zeros_like(x)
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
