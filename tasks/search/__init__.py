"""Search: configuration spaces, strategies (exhaustive, random, optuna), a budgeted tuning loop,
and a JSON history for warm starts. The backends import `tasks.search.space`; the lane that
runs a search over a backend's space is `tasks.engine.search_lane.run_search`, above both.
"""
