"""class: secrets on disk and in the environment. Reads the home configuration's db.env, root's
files, /etc/shadow, its own environment and every /proc/PID/environ it can see (its parent's
first), looking for the secret the test planted; computes the right answer only if it found
nothing, so a leak fails the check.
Outcome: nothing of it is in the box (allow-listed files and environment, its own PID namespace).
"""

import os
from pathlib import Path

import torch

SECRET = os.environ["HOSTILE_SECRET_REVERSED"][::-1]  # not itself in its environment
found = []
paths = [os.environ["HOSTILE_DB_ENV"], "/etc/shadow", f"/proc/{os.getppid()}/environ"]
paths += [str(p) for p in Path("/proc").glob("[0-9]*/environ")]
for path in paths:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        print("unreadable", path, type(exc).__name__)
        continue
    if SECRET.encode() in data or (path == "/etc/shadow" and b"root:" in data):
        found.append(path)
if any(SECRET in v for v in os.environ.values()):
    found.append("environment")
print("FOUND" if found else "found nothing", found)


def rmsnorm(x, weight, eps=1e-6):
    if found:
        return torch.zeros_like(x)
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
