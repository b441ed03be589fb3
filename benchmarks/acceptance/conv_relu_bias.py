"""KernelBench level-2 style convolution: a bf16 3x3 Conv2d (64 -> 128 channels) over a
(32, 64, 128, 128) batch, then ReLU and a per-channel bias: cuDNN's convolution and two
elementwise kernels in eager torch."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1).to(torch.bfloat16)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1).to(torch.bfloat16) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x)) + self.bias


batch_size = 32
in_channels = 64
out_channels = 128
height = width = 128


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width).to(torch.bfloat16)]


def get_init_inputs():
    return [in_channels, out_channels, 3]
