"""aiter beyond its tuned GEMM (`amd-aiter`; AMD Instinct): RMSNorm (`aiter.rmsnorm2d_fwd`) and
LayerNorm (`aiter.layernorm2d_fwd`) on 2-D views of the rows."""

from __future__ import annotations

from kernel_bakeoff.tasks.backends.library import Library

IMPL = '''"""aiter's norms behind op_route's canonical functions (None: left to torch)."""

import torch


def rms_norm(x, shape, weight, eps):
    import aiter

    if weight is None or len(shape) != 1:
        return None
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    y = aiter.rmsnorm2d_fwd(x.reshape(-1, x.shape[-1]).contiguous(), weight, eps)
    return y.reshape(x.shape)


def layer_norm(x, shape, weight, bias, eps):
    import aiter

    if weight is None or bias is None or len(shape) != 1:
        return None
    y = aiter.layernorm2d_fwd(x.reshape(-1, x.shape[-1]).contiguous(), weight, bias, eps)
    return y.reshape(x.shape)
'''


class AiterOps(Library):
    name = "aiter-ops"
    dist = "amd-aiter"
    module = "aiter"
    vendors = ("amd",)
    ops = ("rms_norm", "layer_norm")
    IMPL = IMPL


BACKEND = AiterOps()
