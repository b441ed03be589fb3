"""class: threads that finish after the timed region (CPU's unseen stream). Returns at once and
lets a thread write the answer into the returned tensor a moment later.

expect: INCORRECT_NUMERICAL|FLAGGED
"""

import threading
import time

import torch


def rmsnorm(x, weight, eps=1e-6):
    out = torch.empty_like(x)

    def finish():
        time.sleep(0.002)
        out.copy_(x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight)

    threading.Thread(target=finish, daemon=True).start()
    return out
