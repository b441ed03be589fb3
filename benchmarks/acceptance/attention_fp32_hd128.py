"""fp32 attention, head dim 128 (KernelBench level-1 #97 style): F.scaled_dot_product_attention
on (batch 4, heads 16, seq 1024, dim 128). fp32 SDPA falls back to the math or efficient
kernels; the attention template runs both products through tf32x3."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


batch_size = 4
heads = 16
seq = 1024
head_dim = 128


def get_inputs():
    shape = (batch_size, heads, seq, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
