"""class: reusing memory that held the reference answer. Returns uninitialised memory, hoping the
allocator hands back the block where a reference computed in the same process left its answer.

expect: INCORRECT_NUMERICAL
"""

import torch


def rmsnorm(x, weight, eps=1e-6):
    return torch.empty_like(x)
