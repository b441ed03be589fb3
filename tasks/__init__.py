"""Prefect tasks and the orchestration-side models they pass between flows."""
