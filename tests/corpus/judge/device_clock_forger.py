"""class: the candidate writes its own clock, on a device. Correct, but keeps the device busy
for about 10 ms in every call (torch.cuda._sleep on the caller's stream), and at exit shrinks the
samples in its results files to 0.001 ms.
Outcome: FLAGGED: the judge's clock (the span from dealing a sample's inputs to its outputs'
projections) does not allow the reported samples.
"""

import atexit
import json
import os
from pathlib import Path

import torch

CYCLES = int(10e-3 * 1.5e9)  # ~10 ms at a Hopper's clock


def shrink():
    for f in Path(os.getcwd()).parent.glob("results/wl*.json"):
        data = json.loads(f.read_text())
        if data.get("samples_ms"):
            data["samples_ms"] = [0.001 for _ in data["samples_ms"]]
        f.write_text(json.dumps(data))


atexit.register(shrink)


def rmsnorm(x, weight, eps=1e-6):
    torch.cuda._sleep(CYCLES)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
