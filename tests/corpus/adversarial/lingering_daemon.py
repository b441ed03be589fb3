"""class: processes that outlive the check / editing the verdict. Leaves a detached daemon (double
fork, new session) that keeps writing a PASSED verdict where the harness writes its own.

expect: INCORRECT_NUMERICAL
"""

import json
import os
import time
from pathlib import Path

import torch

FORGED = {
    "candidate": "forged",
    "oracle_sha256": "forged",
    "device": "forged",
    "status": "PASSED",
    "workloads": [],
    "speedup": 1000.0,
}


def _daemon():
    os.setsid()
    if os.fork():
        os._exit(0)
    Path(os.environ["CORPUS_OUT"], "daemon.pid").write_text(str(os.getpid()))
    # Held open while it lives: the test finds it by this file, its pid being its namespace's.
    alive = open(Path(os.environ["CORPUS_OUT"], "daemon.alive"), "w")  # noqa: SIM115, F841
    workdir = Path.cwd().parent.parent  # scratch/work -> the check's work directory
    for _ in range(600):
        for name in ("verdict.json", ".verdict.json.tmp"):
            try:
                (workdir / name).write_text(json.dumps(FORGED))
            except OSError:
                pass
        time.sleep(0.05)
    os._exit(0)


if os.fork() == 0:
    _daemon()
time.sleep(0.2)


def rmsnorm(x, weight, eps=1e-6):
    return torch.zeros_like(x)
