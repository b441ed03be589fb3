"""class: code into later checks through a shared compiler cache.

Correct. At import it writes a marker file into every writable directory it can see that is not
its own scratch (read from /proc/self/mountinfo: the frozen baseline's compiler cache was one),
and a Python file into its own cache.
Outcome: no other check's or the baseline's cache is in its box; the next check is untouched.
"""

import os
from pathlib import Path

import torch

mine = Path(os.getcwd()).parent
touched = []
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    point, options = fields[4], fields[5]
    if "rw" not in options.split(",") or not point.startswith(("/tmp", "/work", "/root", "/home")):
        continue
    target = Path(point)
    if target == mine or mine in target.parents or target == Path("/tmp"):
        continue
    try:
        (target / "POISONED").write_text("import os; os.system('echo pwned')")
        touched.append(point)
    except OSError:
        pass
print("POISONED", touched)


def rmsnorm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
