"""Search lanes: configuration spaces, strategies (exhaustive, random, optuna), a budgeted tuning
loop, and a JSON history for warm starts. `run_search` is the entry point."""

from __future__ import annotations


def run_search(*args, **kwargs):
    # Imported here: the backends import tasks.search.space, and this package imports backends.
    from tasks.search.lane import run_search as _run

    return _run(*args, **kwargs)


run_search.__doc__ = "See tasks.search.lane.run_search."
