"""Prefect flows: freeze, discover, lane, bakeoff (the dispatcher), report. Run as `python -m flows.NAME`."""
