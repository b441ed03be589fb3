"""class: blame. Kills its namespace's init, then its parent (the judge), at import.
Outcome: the check is booked on the candidate (CRASHED with why), never HARNESS_ERROR.
"""

import os
import signal

for pid in (1, os.getppid()):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as exc:
        print("could not kill", pid, exc)
