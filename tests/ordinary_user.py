"""Running a test's orchestrator as an ordinary user of the host, from root too.

As root the ordinary user is `nobody` (uid 65534 on the host, no capabilities, no supplementary
groups), reached through a box (scripts/box.py): the interpreter usually lives under /root
(mode 700, pyenv), which nobody could not reach by `setpriv` alone; the box binds it in. Inside,
the orchestrator is an unprivileged user whose own boxes are nested user namespaces.
"""

from __future__ import annotations

import os
from pathlib import Path

from scripts import box, isolation


def ordinary_user_prefix(writable: Path) -> list[str]:
    """The command prefix that runs a command as an ordinary user with `writable` writable
    (nothing for a user that is one already)."""
    if os.geteuid() != 0:
        return []
    plan = box.plan(write=[writable], cwd=str(writable))
    # The orchestrator in there is not itself untrusted code: it makes boxes of its own.
    return isolation.wrap(["env", "-u", isolation.MARK], {}, plan)
