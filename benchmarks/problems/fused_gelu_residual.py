"""KernelBench-style problem: bias add, tanh-GELU, scale and residual add over a wide activation.
Memory-bound: eager torch runs one kernel per op; a fused kernel reads two tensors, writes one."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(hidden) * 0.1)
        self.scale = scale

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.gelu(x + self.bias, approximate="tanh")
        return y * self.scale + residual


rows = 4096
hidden = 8192


def get_inputs():
    return [torch.randn(rows, hidden), torch.randn(rows, hidden)]


def get_init_inputs():
    return [hidden, 0.5]
