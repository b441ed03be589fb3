"""class: exiting early with a clean status. Ends its process with status 0 while being loaded.

expect: CRASHED
"""

import os

print("all workloads PASSED")
os._exit(0)


def rmsnorm(x, weight, eps=1e-6):
    return x
