"""class: finding the reference's outputs in memory. Walks the garbage collector's objects (and
the frames above its call) for a tensor of the output's shape that is not one of its inputs,
and returns it; computes nothing. The reference runs in the judge, after this process is gone,
so there is none to find.

expect: INCORRECT_NUMERICAL|RUNTIME_ERROR
"""

import gc
import sys

import torch


def rmsnorm(x, weight, eps=1e-6):
    frames, f = [], sys._getframe(1)
    while f is not None:
        frames.append(f)
        f = f.f_back
    seen = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
    seen += [v for fr in frames for v in fr.f_locals.values() if isinstance(v, torch.Tensor)]
    for t in seen:
        if t.shape == x.shape and t.dtype == x.dtype and t.data_ptr() != x.data_ptr():
            return t.clone()
    return torch.zeros_like(x)
