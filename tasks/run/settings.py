"""The orchestration side's `BAKEOFF_*` settings: one typed object, read at the entry points.

The rule: an entry point (the `bakeoff` command's main, `flows.live.run`, each flow's first
lines after `take_key()`) calls `enter()`, which reads the environment once and keeps what it
read; deep code calls `current()`, which returns what the entry point read. Where no entry point
ran (a library caller, a test calling deep code), `current()` reads the environment as it is at
that call, so a test's `monkeypatch.setenv` is seen without more. tests/conftest.py `forget()`s
after every test, so an entry point one test ran leaves nothing behind for the next; a test that
changes the environment after calling an entry point calls `enter()` again.

A bad value is `BadInput` naming the variable and the value, one line at the command.

Not here, on purpose: what the orchestration side hands the harness by name in a child's
environment (scripts/ reads those: its interface across the process boundary, listed in
tests/test_settings.py), and the model's `BAKEOFF_AGENT_*` (tasks/agents/settings.py).

Importing this module reads nothing.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from kernel_bakeoff.scripts.errors import BadInput

PREFIX = "BAKEOFF_"


def _default_lock_dir() -> Path:
    return Path(f"/tmp/kernel-bakeoff-locks-{os.getuid()}")  # per user: leases are host-wide


class BakeoffSettings(BaseSettings):
    """Each field is `BAKEOFF_<FIELD>`; its description is what a value must be (said when it
    is not). An empty variable is as if unset."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, env_ignore_empty=True, frozen=True)

    # CPU slots (lanes at once) on a host without GPUs; None: the cores, at most 8 (gpu_pool).
    cpu_slots: int | None = Field(None, ge=1, description="a whole number of at least 1")
    # Where the device lease files and their journal live: bake-offs sharing it share devices.
    lock_dir: Path = Field(default_factory=_default_lock_dir, description="a directory")
    # The host named in leases and history rows (several service hosts behind one name).
    host: str = Field(default_factory=socket.gethostname, description="a host name")
    # A timing spread (IQR over median) above this is not a figure to act on; None: 0.25
    # (tasks/check/standing.py MAX_RELATIVE_SPREAD). A shared host raises it.
    review_max_spread: float | None = Field(None, gt=0, description="a number above 0")
    # Candidates precompiled at once before their checks; None: by their languages
    # (tasks/check/evaluate.py precompile_jobs), 0: none.
    precompile_jobs: int | None = Field(
        None, ge=0, description="a whole number of precompiles at once"
    )
    # New freezes of a noisy frozen baseline before any candidate races against it (#40).
    retime_tries: int = Field(2, ge=0, description="a whole number of at least 0")
    # The history store: a PostgreSQL URL (service mode; it may hold a password, hence secret);
    # None: history.sqlite in the runs root.
    history_url: SecretStr | None = Field(None, description="a database URL")
    # The campaigns' reference archive, `module:callable`; None: the ledger in the campaign's
    # directory (tasks/campaign.py).
    reference_archive: str | None = Field(
        None, pattern=r"^[\w.]+:\w+$", description="module:callable"
    )
    # With TRITON_INTERPRET=1 on a CPU host, Triton templates and interpreted library kernels
    # become candidates (their times are not comparable with native code, and slow).
    interpreted_templates: bool = Field(False, description="1 or 0 (true or false)")


_entered: BakeoffSettings | None = None  # what the last entry point read; None: none did


def load() -> BakeoffSettings:
    """The settings in the environment now; a bad value is BadInput naming it."""
    try:
        return BakeoffSettings()
    except ValidationError as err:
        first = err.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else ""
        field = BakeoffSettings.model_fields.get(name)
        must = field.description if field and field.description else first["msg"]
        raise BadInput(
            f"{PREFIX}{name.upper()}", f"must be {must}, got {first['input']!r}"
        ) from None  # the line says it all; the chain would bury it in a flow's log


def enter() -> BakeoffSettings:
    """At an entry point: read the environment once; deep code's `current()` returns this."""
    global _entered
    _entered = load()
    return _entered


def current() -> BakeoffSettings:
    """What the entry point read, else (library use, tests) the environment as it is now."""
    return _entered if _entered is not None else load()


def forget() -> None:
    """Back to no entry point (tests: after each one)."""
    global _entered
    _entered = None
