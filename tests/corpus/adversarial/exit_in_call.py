"""class: exiting early with a clean status. Ends its process with status 0 on the first call.

expect: CRASHED
"""

import os


def rmsnorm(x, weight, eps=1e-6):
    print("PASSED")
    os._exit(0)
