"""TEMPORARY stand-in: the `backends` branch owns this package and replaces it at merge.

Only `languages()` is provided, so the flows can validate `--backends` before the real
backend registry (with its availability probes) arrives.
"""

from __future__ import annotations


def languages() -> list[str]:
    """Languages a lane can be run in."""
    return ["torch", "triton"]
