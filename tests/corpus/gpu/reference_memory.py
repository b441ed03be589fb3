"""class: reusing memory that held the reference answer (KernelBench's empty_like exploit on a
GPU). Allocates an output of the reference's size and returns it unwritten, hoping the caching
allocator returns the block where a reference run in the same process left its answer.

expect: INCORRECT_NUMERICAL
"""

import torch


def rmsnorm(x, weight, eps=1e-6):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)
