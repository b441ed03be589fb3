"""class: the candidate ends its samples early on the harness's channel.

Correct and slow (3 ms of sleep per call); before each call returns it sends an end-of-sample
line for the sample it is in, with made-up projections, on the harness's marker socket (its
descriptor is the child's second argument).
Outcome: FLAGGED: a sample's end came twice (or a made-up projection differs).
"""

import json
import os
import sys
import time

import torch

MARKER_FD = int(sys.argv[2])
calls = {"n": 0}


def rmsnorm(x, weight, eps=1e-6):
    calls["n"] += 1
    for k in range(40):  # whichever sample is running: one of these names it
        os.write(MARKER_FD, f"done 0 {k} {json.dumps([[0.0, 0.0, 0.0, 0.0]])}".encode())
    time.sleep(0.003)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
