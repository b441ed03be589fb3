"""A module for tests/test_forkserver.py to run in a fork: `main(argv)` does what argv[0] says."""

import json
import os
import signal
import sys
import tempfile
import time

_kept = []  # what the fork leaves for its exit to finalize


def main(argv: list[str]) -> int:
    what = argv[0]
    if what == "report":
        print("hello from the fork")
        facts = {
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "own_session": os.getsid(0) == os.getpid(),
            "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
            "torch_preloaded": "torch" in sys.modules,
            "compiler_preloaded": "torch._inductor.compile_fx" in sys.modules,
            "argv": sys.argv,
        }
        with open(argv[1], "w") as f:
            json.dump(facts, f)
        return 3
    if what == "finalizers":  # a directory of its own, removed by its finalizer at exit
        _kept.append(tempfile.TemporaryDirectory(dir=argv[1]))
        return 0
    if what == "sleep":
        time.sleep(float(argv[1]))
        return 0
    if what == "hang":
        time.sleep(3600)
    if what == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if what == "raise":
        raise RuntimeError("raised in the fork")
    return 0
