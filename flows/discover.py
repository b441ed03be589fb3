"""Discover flow: what already exists for the op, measured on the frozen oracle, and the plan.

A thin flow over the lane engine (tasks/engine/discover.py): Discover is a lane whose proposer
is the backends. It leases one device, checks what exists, has the reviewer look at the best
one measured, and keeps the outcome under `discover/`, reused by a re-run with the same key.
"""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from kernel_bakeoff.flows.opening import Opened
from kernel_bakeoff.tasks.discover.table import matched_line
from kernel_bakeoff.tasks.engine.discover import run_discover
from kernel_bakeoff.tasks.models.run import DiscoverOutcome
from kernel_bakeoff.tasks.run.input_identity import Frozen
from kernel_bakeoff.tasks.run.key import take_key
from kernel_bakeoff.tasks.run.settings import enter


def _run_name() -> str:
    frozen = flow_run.parameters.get("frozen") or {}
    return f"discover {frozen.op if isinstance(frozen, Frozen) else frozen.get('op', '?')}"


@flow(name="discover", flow_run_name=_run_name)
def discover(run: Opened, frozen: Frozen, timeout_s: float = 3600.0) -> DiscoverOutcome:
    """Measure what exists for `frozen`'s op, for the opened `run`, and plan its lanes."""
    take_key()  # an entry point: nothing this process starts from here inherits the key
    enter()  # the BAKEOFF_* settings, read once for this flow's deep code (tasks/run/settings.py)
    logger = get_run_logger()
    outcome = run_discover(run.request, run.run_dir, frozen, timeout_s, logger.info, logger.warning)
    if not outcome.reused:
        plan = outcome.plan
        logger.info(matched_line(plan))
        entries = ", ".join(f"{e.language or '(unnamed)'}:{e.mode}" for e in plan.plan)
        logger.info(f"plan: {entries or 'empty'}; reviewer: {outcome.review.decision}")
    return outcome
