"""KernelBench-style problem: RMSNorm with a learned weight over 8192-wide rows, written the way
models write it (square, mean, rsqrt, two multiplies). Memory-bound: one read, one write."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(variance + self.eps) * self.weight


rows = 4096
hidden = 8192


def get_inputs():
    return [torch.randn(rows, hidden)]


def get_init_inputs():
    return [hidden, 1e-6]
