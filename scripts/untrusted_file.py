"""Reading a file that untrusted code could have written: never through a link, never a
device, a pipe or a socket, never more than the reader expects.

The judge reads what the candidate's process left in its scratch directory after that process
is gone. A name there may have been replaced by a link to a file the judge can read and the
candidate cannot, by a FIFO (the judge's read would block until its deadline: a harness error
the candidate provoked), or by `/dev/zero` (a read that never ends).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class Unusable(Exception):
    """Why the file cannot be what it should be (one line)."""


def read_bytes(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; Unusable otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise Unusable(f"{Path(path).name}: missing") from None
    except OSError as exc:
        raise Unusable(f"{Path(path).name}: cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Unusable(f"{Path(path).name}: not a regular file")
        if info.st_size > limit:
            raise Unusable(f"{Path(path).name}: {info.st_size} bytes, more than {limit}")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise Unusable(f"{Path(path).name}: more than {limit} bytes")
    return data
