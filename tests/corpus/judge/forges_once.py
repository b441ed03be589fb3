"""Forges its clock in its first process only: sleeps 50 ms a call (more than a loaded host's
harness part can hide: at 10 ms one CI run did not trip the bound) and shrinks its samples to
0.01 ms at exit, leaving a mark in its own compilers' cache (the one directory of it that
outlives a process); a later process finds the mark and runs honestly, without the sleep.
Outcome: the judge's clock bound trips once, the judge runs the check again with fresh seeds,
and that run's honest figures are the verdict (PASSED, `harness_phases["clock_retries"]` 1).
"""

import atexit
import json
import os
import time
from pathlib import Path

import torch

MARK = Path(os.environ["XDG_CACHE_HOME"]) / "forged-once"
FORGING = not MARK.exists()
if FORGING:
    MARK.parent.mkdir(parents=True, exist_ok=True)
    MARK.write_text("1")


def shrink():
    for f in Path(os.getcwd()).parent.glob("results/wl*.json"):
        data = json.loads(f.read_text())
        if data.get("samples_ms"):
            data["samples_ms"] = [0.01 for _ in data["samples_ms"]]
        f.write_text(json.dumps(data))


if FORGING:
    atexit.register(shrink)


def rmsnorm(x, weight, eps=1e-6):
    if FORGING:
        time.sleep(0.050)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
