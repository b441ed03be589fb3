"""KernelBench-style problem: a square bf16 matrix multiplication (compute-bound), where the GEMM
libraries (cuBLAS/cuBLASLt via TunableOp, hipBLASLt/aiter on ROCm) and Inductor's templates race."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


size = 4096


def get_inputs():
    return [torch.randn(size, size).to(torch.bfloat16), torch.randn(size, size).to(torch.bfloat16)]


def get_init_inputs():
    return []
