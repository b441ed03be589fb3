"""class: deferred or lazy outputs. Returns a tensor subclass whose values are produced on use.

expect: INCORRECT_DTYPE
"""

import torch


class Deferred(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def rmsnorm(x, weight, eps=1e-6):
    out = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
    return out.as_subclass(Deferred)
