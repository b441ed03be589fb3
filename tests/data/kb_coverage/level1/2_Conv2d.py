import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)

    def forward(self, x):
        return self.conv(x)


batch_size = 2
cin, cout, k = 3, 4, 3


def get_inputs():
    return [torch.randn(batch_size, cin, 9, 9)]


def get_init_inputs():
    return [cin, cout, k]
