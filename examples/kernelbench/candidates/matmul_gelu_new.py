"""Candidate for matmul_gelu.py: one addmm and the erf GELU written out (same parameters)."""

import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        # Built exactly as the problem builds it, so the seeded initialisation matches.
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return 0.5 * y * (1.0 + torch.erf(y / math.sqrt(2.0)))
