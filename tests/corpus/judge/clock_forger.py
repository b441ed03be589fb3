"""class: the candidate writes its own clock.

Correct, but sleeps 50 ms in every call (more than a loaded host can hide in the harness's part). It sends its own end-of-sample lines on the harness's
channel ahead of the harness's, and at exit shrinks the samples in its results files to 0.01 ms.
Outcome: FLAGGED: the judge's own clock (the span from dealing a sample's inputs to its
outputs' projections) does not allow the reported samples, in each of the judge's runs.
"""

import atexit
import json
import os
import sys
import time
from pathlib import Path

import torch

MARKER_FD = int(sys.argv[2]) if len(sys.argv) > 2 else None


def shrink():
    for f in Path(os.getcwd()).parent.glob("results/wl*.json"):
        data = json.loads(f.read_text())
        if data.get("samples_ms"):
            data["samples_ms"] = [0.01 for _ in data["samples_ms"]]
        f.write_text(json.dumps(data))


atexit.register(shrink)


def rmsnorm(x, weight, eps=1e-6):
    time.sleep(0.050)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
