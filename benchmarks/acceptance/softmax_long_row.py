"""KernelBench level-1 #23 style softmax with few, very long rows: 16 rows of 2**20 fp32
(4 MiB a row). A row does not fit a program's registers: the rowwise template's online
(one statistics pass, then a write pass) and max/sum variants over chunks."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 16
dim = 1 << 20


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
