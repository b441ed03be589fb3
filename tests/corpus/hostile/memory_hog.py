"""class: no resource bounds (memory). Allocates and touches up to 6 GiB at import, saying how
far it got. Outcome: killed at the box's memory bound, CRASHED with that reason.
"""

import torch

chunks = []
for i in range(1, 97):
    chunks.append(torch.ones(64 * 2**20 // 4))  # 64 MiB, every page touched
    print("allocated", 64 * i, "MiB", flush=True)


def rmsnorm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
