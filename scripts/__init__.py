"""The harness: freeze an op into an oracle, check and time one candidate against it.

Runs on a bare GPU box with torch (+ triton) and pydantic; it never imports prefect.
"""
