"""The run directory and what is kept in it: the store of candidates, verdicts and lane results,
the lock that keeps one bake-off per directory, the input's identity before it is frozen, what a
finished lane is called, and the run's BAKEOFF_* settings (read at the entry points)."""
