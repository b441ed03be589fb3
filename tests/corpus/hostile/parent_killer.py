"""class: blame. Kills its namespace's init, then its parent (the judge), at import.
Outcome: neither dies (its box's init ignores it; the judge is outside its PID namespace), and
the check is booked on the candidate (it defines no kernel: COMPILE_ERROR), never HARNESS_ERROR.
"""

import os
import signal

for pid in (1, os.getppid()):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as exc:
        print("could not kill", pid, exc)
