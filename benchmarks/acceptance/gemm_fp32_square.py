"""KernelBench level-1 #1 shape: an fp32 square GEMM, C = A @ B with N = 4096. cuBLAS's fp32
GEMM runs without tensor cores; the GEMM template's tf32x3 (split-precision tensor-core math)
is the candidate beyond torch.compile's modes (issue #43)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 4096


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
