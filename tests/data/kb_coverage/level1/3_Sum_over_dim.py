import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 3
dim1 = 67


def get_inputs():
    return [torch.randn(batch_size, dim1, 5)]


def get_init_inputs():
    return [1]
