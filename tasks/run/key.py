"""The one holder of the API key: `take_key` moves ANTHROPIC_API_KEY out of the environment
on first sight and keeps it here, so that no process started afterwards inherits it.

A module of its own, with nothing imported, so that the `bakeoff` command takes the key first
thing without loading the settings' models (pydantic, a tenth of a second of its start-up). It
sits in the run room, not the model's (tasks/agents): every entry point takes the key, and a
run without a model never loads the model's room.
"""

from __future__ import annotations

import os

KEY_VARIABLE = "ANTHROPIC_API_KEY"
NO_MODEL = f"no model configured; set {KEY_VARIABLE}"  # a skipped lane's reason

_held_key: str | None = None


def take_key() -> str | None:
    """The API key, moved out of the environment on first sight and kept here only."""
    global _held_key
    value = os.environ.pop(KEY_VARIABLE, None)
    if value:
        _held_key = value
    return _held_key


def forget_key() -> None:
    """Drop the held key (tests, and a process that wants the model off)."""
    global _held_key
    _held_key = None


def model_configured() -> bool:
    """Whether a model answers here: the key was seen (in this process or moved out before)."""
    return take_key() is not None
