"""class: precomputed outputs embedded for the frozen inputs. Draws the inputs a harness would
draw with a fixed seed (0, and the spec's first draws), computes their answer once at import
and returns it for every call. Every check draws its inputs from fresh seeds.

expect: INCORRECT_NUMERICAL
"""

import torch

_answers = {}


def rmsnorm(x, weight, eps=1e-6):
    key = tuple(x.shape)
    if key not in _answers:
        g = torch.Generator().manual_seed(0)
        guess = torch.randn(x.shape, generator=g, dtype=x.dtype)
        _answers[key] = guess * torch.rsqrt(guess.pow(2).mean(-1, keepdim=True) + eps) * weight
    return _answers[key].clone()
