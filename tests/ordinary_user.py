"""Running a test's orchestrator as an ordinary user of the host, from root too.

As root the ordinary user is `nobody` (uid 65534 on the host, no capabilities, no supplementary
groups), reached through a box (scripts/box.py): the interpreter usually lives under /root
(mode 700, pyenv), which nobody could not reach by `setpriv` alone; the box binds it in. Inside,
the orchestrator is an unprivileged user whose own boxes are nested user namespaces.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernel_bakeoff.scripts import box, isolation

REPO_ROOT = Path(__file__).resolve().parents[1]


def ordinary_user_prefix(writable: Path) -> list[str]:
    """The command prefix that runs a command as an ordinary user with `writable` writable
    (nothing for a user that is one already)."""
    if os.geteuid() != 0:
        return []
    skip_unless_reachable()
    plan = box.plan(write=[writable], cwd=str(writable))
    # The orchestrator in there is not itself untrusted code: it makes boxes of its own.
    return isolation.wrap(["env", "-u", isolation.MARK], {}, plan)


def skip_unless_reachable() -> None:
    """Skip where no ordinary user can reach this checkout (a clone made in `mktemp -d`: 0700)."""
    closed = [d for d in (REPO_ROOT, *REPO_ROOT.parents) if not os.stat(d).st_mode & 0o001]
    if closed:  # e.g. a clone made in `mktemp -d` (0700): no ordinary user reaches it
        pytest.skip(
            f"an ordinary user cannot enter {closed[0]} (mode 0{os.stat(closed[0]).st_mode & 0o777:o})"
        )
