"""KernelBench level-2 style GEMM with an epilogue: a bf16 Linear (8192 x 4096 -> 4096) with a
bias, then GELU and a scale. Eager torch runs the GEMM (cuBLAS) and two elementwise kernels;
a compiled candidate can fuse the epilogue."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features).to(torch.bfloat16)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.linear(x)) * self.scale


batch_size = 8192
in_features = 4096
out_features = 4096


def get_inputs():
    return [torch.randn(batch_size, in_features).to(torch.bfloat16)]


def get_init_inputs():
    return [in_features, out_features, 0.5]
