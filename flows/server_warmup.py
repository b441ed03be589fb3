"""Start Prefect's temporary server while the CLI freezes the kernel, not after.

`bakeoff run` without a Prefect server configured (no PREFECT_API_URL) has Prefect start a
temporary one at the first flow call: 20-25 s before the bake-off's first step, after the
freeze. On a GPU host the two can overlap: the server's start is host work, the freeze's timing
is device time on a host with cores to spare. On a CPU-only host they would share the cores the
frozen baseline is timed on, so there the server starts as before.

    join = start_beside_freeze(devices_kind)
    warm_fork_server(devices)
    freeze(...)
    join()   # before any flow runs: Prefect's start() is not safe to call from two threads

The fork server that the flow's checks will fork from (scripts/forkserver.py) starts beside the
freeze likewise, on a GPU host only: its import of torch (seconds, docs/studies/h200_figures.md)
was the first check's time.
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


def warm_fork_server(devices, on_cpu: bool = False) -> bool:
    """Start the fork server for the checks on the pool's first device (Discover's, where the
    pool is free) without waiting for it; not on a CPU-only host unless `on_cpu`. True if
    started (or already running)."""
    if devices.kind == "cpu" and not on_cpu:
        return False
    from scripts.check import warm_up

    warm_up(devices.env_for(devices.ids[0]))
    return True


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
