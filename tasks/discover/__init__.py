"""Discover: measure what every backend proposes on the frozen oracle and plan the lanes
(plan.py), keep what a killed Discover finished (resume.py), and its table (table.py)."""
