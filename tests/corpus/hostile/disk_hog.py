"""class: no resource bounds (disk). Writes up to 2 GiB into its scratch directory in 32 MiB
steps. Outcome: killed at the box's scratch bound, CRASHED with that reason.
"""

import os
import time

import torch

block = os.urandom(1 << 20) * 32
with open(os.path.join(os.environ["TMPDIR"], "fill"), "wb") as f:
    for i in range(1, 65):
        f.write(block)
        f.flush()
        os.fsync(f.fileno())
        print("wrote", 32 * i, "MiB", flush=True)
        time.sleep(0.05)


def rmsnorm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
