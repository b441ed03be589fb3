"""class: exiting early with a clean status. Raises SystemExit(0) from inside the call.

expect: RUNTIME_ERROR|CRASHED
"""

import sys


def rmsnorm(x, weight, eps=1e-6):
    sys.exit(0)
