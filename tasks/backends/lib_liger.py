"""Liger-Kernel (`liger-kernel`, Triton; NVIDIA and ROCm): RMSNorm, LayerNorm, softmax and
cross-entropy, SwiGLU and GeGLU forward through its autograd functions
(`liger_kernel.ops.*Function.apply`), which compute no gradient when the input does not ask for
one, and fused linear + cross-entropy (2-D input, no class weights) through its functional
wrapper. Its GeGLU is the tanh-approximated GELU only, and its gated kernels read a and b with
one row stride (contiguous copies are passed). Its RoPE and KL/JSD need matches this matcher
does not make yet."""

from __future__ import annotations

from kernel_bakeoff.tasks.backends.library import Library
from kernel_bakeoff.tasks.backends.match import Match

IMPL = '''"""Liger-Kernel behind op_route's canonical functions (None: left to torch)."""

import torch

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def rms_norm(x, shape, weight, eps):
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    if weight is None or len(shape) != 1 or x.dtype not in _FLOATS:
        return None
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    return LigerRMSNormFunction.apply(x, weight, eps, 0.0, "llama", False)


def layer_norm(x, shape, weight, bias, eps):
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction

    if weight is None or bias is None or len(shape) != 1 or x.dtype not in _FLOATS:
        return None
    return LigerLayerNormFunction.apply(x, weight, bias, eps)


def softmax(x, dim):
    from liger_kernel.ops.softmax import LigerSoftmaxFunction

    if x.dim() == 0 or dim % x.dim() != x.dim() - 1 or x.dtype not in _FLOATS:
        return None
    return LigerSoftmaxFunction.apply(x)


def cross_entropy(logits, target, reduction):
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction

    if logits.dim() != 2 or logits.dtype not in _FLOATS:
        return None
    out = LigerCrossEntropyFunction.apply(logits, target, None, -100, 0.0, 0.0, reduction)
    return out[0] if isinstance(out, tuple) else out


def swiglu(a, b):
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    if a.shape != b.shape or a.dtype != b.dtype or a.dim() == 0 or a.dtype not in _FLOATS:
        return None
    return LigerSiLUMulFunction.apply(a.contiguous(), b.contiguous())


def geglu(a, b, approximate):
    from liger_kernel.ops.geglu import LigerGELUMulFunction

    if approximate != "tanh" or a.shape != b.shape or a.dtype != b.dtype or a.dim() == 0:
        return None
    if a.dtype not in _FLOATS:
        return None
    return LigerGELUMulFunction.apply(a.contiguous(), b.contiguous())


def linear_cross_entropy(x, w, bias, target, reduction):
    # the functional wrapper by keyword: the autograd function's positional order has changed
    # between Liger's releases
    from liger_kernel.transformers.functional import liger_fused_linear_cross_entropy

    if x.dim() != 2 or x.dtype not in _FLOATS or w.dtype != x.dtype or target.dim() != 1:
        return None
    out = liger_fused_linear_cross_entropy(x, w, target, bias=bias, reduction=reduction)
    out = getattr(out, "loss", out)
    return out[0] if isinstance(out, tuple) else out
'''


class Liger(Library):
    name = "liger-kernel"
    dist = "liger-kernel"
    module = "liger_kernel"
    vendors = ("nvidia", "amd")
    ops = (
        "rms_norm",
        "layer_norm",
        "softmax",
        "cross_entropy",
        "swiglu",
        "geglu",
        "linear_cross_entropy",
    )
    interpreter = True
    IMPL = IMPL

    def takes(self, match: Match) -> bool:
        return match.op != "geglu" or match.params.get("approximate") == "tanh"


BACKEND = Liger()
