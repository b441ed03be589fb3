"""The wall-clock limit a role attempt shares with the work it starts.

In the check room because the harness side of a lane (tasks/check/evaluate.py, the check function)
honours it too, and must not load Prefect or the role registry to do so.
"""

from __future__ import annotations

import threading
import time


class DeadlineExceeded(Exception):
    """Raised by a lane's check_fn once its role's deadline has passed."""


class Deadline:
    """Wall-clock limit shared by a role attempt and the work it starts."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._end = time.monotonic() + seconds
        self._cancelled = threading.Event()

    def remaining(self) -> float:
        return 0.0 if self._cancelled.is_set() else max(0.0, self._end - time.monotonic())

    def cancel(self) -> None:
        self._cancelled.set()
