"""Lane flow: one language, one mode, a budget; runs on one leased device.

The lane engine (tasks/engine/lane.py) does the work: it leases a device from this host's
pool (waiting while all are busy), has the lane's proposer answer (the search without a
model; the model's lane loop, or an operator's drop-in, where one is configured), every
candidate checked on that device against the frozen baseline, has the reviewer judge the best,
and writes the lane's result. This flow gives it Prefect's logger and run name, outlives a
dying worker, and marks the flow run failed when the lane failed; it never raises past the
dispatcher otherwise.

Run alone as `python -m kernel_bakeoff.flows.lane CONFIG.json`; deployments run it per lane on GPU workers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from kernel_bakeoff.flows.prefect_workarounds import LaneStarts, outlive_worker
from kernel_bakeoff.tasks.engine.lane import lane_store, run_lane
from kernel_bakeoff.tasks.models.run import LaneConfig, LaneResult
from kernel_bakeoff.tasks.run.key import take_key
from kernel_bakeoff.tasks.run.settings import enter


class LaneFailed(Exception):
    """Marks the lane's flow run failed; its result file holds the reason."""


def _run_name() -> str:
    config = flow_run.parameters.get("config") or {}
    if isinstance(config, LaneConfig):
        config = config.model_dump()
    lane = config.get("lane", {})
    op = Path(config.get("run_dir", "")).name
    return f"lane {lane.get('key', '?')} {lane.get('mode', '')} {op}".strip()


@flow(name="lane", flow_run_name=_run_name)
def lane(config: LaneConfig) -> LaneResult:
    """Run one lane of a bake-off and write `lanes/<key>/lane_result.json`."""
    take_key()  # an entry point: nothing this process starts from here inherits the key
    enter()  # the BAKEOFF_* settings, read once for this flow's deep code (tasks/run/settings.py)
    outlive_worker()  # a lane deployment's run: its worker may die before it
    LaneStarts.started()
    logger = get_run_logger()
    store = lane_store(config)

    def say(message: str) -> None:
        logger.info(f"[{config.lane.key}] {message}")
        store.log(message)

    result = run_lane(config, store, say)
    if result.status == "failed":
        raise LaneFailed(result.reason)
    return result


if __name__ == "__main__":
    print(lane(LaneConfig.model_validate(json.loads(Path(sys.argv[1]).read_text()))))
