"""What a lane that ran to its end is called: `completed` only when it used its budget of
candidates, `cut` when its time budget (--lane-timeout) stopped it first, and `failed` when it
checked no candidate at all (nothing ran to completion)."""

from __future__ import annotations

from kernel_bakeoff.tasks.models.run import LaneConfig, LaneResult


def settle(result: LaneResult, config: LaneConfig) -> None:
    """Set the status and reason of a lane whose roles answered (called where it would be
    marked completed)."""
    count = len(result.candidates)
    if count == 0:
        result.status, result.reason = "failed", "no candidate was checked"
        return
    elapsed = (
        (result.finished or result.started) - result.started
        if result.started and result.finished
        else None
    )
    out_of_time = elapsed is not None and elapsed.total_seconds() >= config.lane_timeout_s
    if count < config.budget and out_of_time:
        result.status = "cut"
        result.reason = (
            f"the lane's time budget ({config.lane_timeout_s:g} s, --lane-timeout) cut it "
            f"after {count} of {config.budget} candidates"
        )
        return
    result.status, result.reason = "completed", ""
