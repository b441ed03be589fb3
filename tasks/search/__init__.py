"""Search lanes: configuration spaces, strategies (exhaustive, random, optuna), a budgeted tuning
loop, and a JSON history for warm starts. `tasks.search.lane.run_search` is the entry point.

Nothing is imported here: the backends import `tasks.search.space`, and the lane imports the
backends, so a name of the lane re-exported by this package would tie the two into a circle.
"""
