"""KernelBench level-1 #3 shape: an fp32 batched GEMM, torch.bmm of (128, 512, 1024) by
(128, 1024, 2048): the batched GEMM template, one grid axis per batch, tf32x3 for fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 128
m = 512
k = 1024
n = 2048


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
