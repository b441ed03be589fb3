"""QuACK (`quack-kernels`, CuTe DSL kernels; NVIDIA Hopper and newer): RMSNorm, softmax and
cross-entropy forward (`quack.rmsnorm`, `quack.softmax`, `quack.cross_entropy`)."""

from __future__ import annotations

import torch

from kernel_bakeoff.tasks.backends.library import Library

IMPL = '''"""QuACK behind op_route's canonical functions (None: left to torch)."""

import torch

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def rms_norm(x, shape, weight, eps):
    import quack

    if len(shape) != 1 or x.dtype not in _FLOATS:
        return None
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    y = quack.rmsnorm(x.reshape(-1, x.shape[-1]), weight, eps=eps)
    return y.reshape(x.shape)


def softmax(x, dim):
    import quack

    if x.dim() == 0 or dim % x.dim() != x.dim() - 1 or x.dtype not in _FLOATS:
        return None
    return quack.softmax(x.reshape(-1, x.shape[-1])).reshape(x.shape)


def cross_entropy(logits, target, reduction):
    import quack

    if logits.dim() != 2 or logits.dtype not in _FLOATS:
        return None
    return quack.cross_entropy(logits, target, reduction=reduction)
'''


class Quack(Library):
    name = "quack"
    dist = "quack-kernels"
    module = "quack"
    ops = ("rms_norm", "softmax", "cross_entropy")
    IMPL = IMPL

    def device_reason(self) -> str | None:
        major, _ = torch.cuda.get_device_capability()
        return None if major >= 9 else f"QuACK needs Hopper or newer (sm_90+), not sm_{major}x"


BACKEND = Quack()
