"""Start Prefect's temporary server while the CLI freezes the kernel, not after.

`bakeoff run` without a Prefect server configured (no PREFECT_API_URL) has Prefect start a
temporary one at the first flow call: 20-25 s before the bake-off's first step, after the
freeze. On a GPU host the two can overlap: the server's start is host work, the freeze's timing
is device time on a host with cores to spare. On a CPU-only host they would share the cores the
frozen baseline is timed on, so there the server starts as before.

    join = start_beside_freeze(devices_kind)
    freeze(...)
    join()   # before any flow runs: Prefect's start() is not safe to call from two threads
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


def wanted(devices_kind: str) -> bool:
    """Only on a GPU host, only where Prefect would start a temporary server itself."""
    if devices_kind == "cpu" or os.environ.get("PREFECT_API_URL"):
        return False
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    return not PREFECT_API_URL.value() and bool(PREFECT_SERVER_EPHEMERAL_ENABLED.value())


def start_beside_freeze(devices_kind: str) -> Callable[[], None]:
    """Start the temporary server in a thread (Prefect imported there too); return the call
    that waits for it. A start that fails here is left to the first flow call, which starts
    the server itself and says why it could not."""
    if devices_kind == "cpu" or os.environ.get("PREFECT_API_URL"):
        return lambda: None

    def start() -> None:
        try:
            if wanted(devices_kind):
                from prefect.server.api.server import SubprocessASGIServer

                SubprocessASGIServer().start()  # the instance the first flow call will use
        except Exception:  # noqa: BLE001 - the flow's own start reports it
            return

    thread = threading.Thread(target=start, name="prefect-server-start", daemon=True)
    thread.start()
    return thread.join
