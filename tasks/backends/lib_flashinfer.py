"""FlashInfer (`flashinfer-python`; NVIDIA): RMSNorm (`flashinfer.norm.rmsnorm`), LayerNorm for
bf16 inputs with fp32 affine parameters (`flashinfer.norm.layernorm`, its only layout) and
softmax (`flashinfer.sampling.softmax`). Its attention kernels need an attention match, not made
yet."""

from __future__ import annotations

from kernel_bakeoff.tasks.backends.library import Library

IMPL = '''"""FlashInfer behind op_route's canonical functions (None: left to torch)."""

import torch


def rms_norm(x, shape, weight, eps):
    from flashinfer.norm import rmsnorm

    if weight is None or len(shape) != 1 or x.dim() not in (2, 3):
        return None
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    return rmsnorm(x.contiguous(), weight, eps)


def layer_norm(x, shape, weight, bias, eps):
    from flashinfer.norm import layernorm

    if x.dtype != torch.bfloat16 or x.dim() != 2 or weight is None or bias is None:
        return None
    if weight.dtype != torch.float32 or bias.dtype != torch.float32:
        return None
    return layernorm(x.contiguous(), weight, bias, eps)


def softmax(x, dim):
    from flashinfer.sampling import softmax as fi_softmax

    if x.dim() != 2 or dim % 2 != 1 or x.dtype != torch.float32:
        return None
    return fi_softmax(x.contiguous())
'''


class FlashInfer(Library):
    name = "flashinfer"
    dist = "flashinfer-python"
    module = "flashinfer"
    ops = ("rms_norm", "layer_norm", "softmax")
    IMPL = IMPL


BACKEND = FlashInfer()
