"""Lane flow: one language, one mode, a budget; runs on one leased device.

It leases a device from this host's pool (waiting while all are busy), asks the optimizer or
author role for candidates (the model-driven lane loop when a model is configured, else the
search), every one checked on that device against the frozen baseline, then asks the reviewer
about the best, and after a measured win of a model lane writes one learned card (in bakeoff
mode the bake-off curates one card for all its lanes instead). Without a
model an author lane is skipped, saying so; a lane that checked nothing is never `completed`.
Whatever happens, the lane's result is written under its directory and the device is given
back; a failure marks the flow run failed and never raises past the dispatcher.

Run alone as `python -m flows.lane CONFIG.json`; deployments run it per lane on GPU workers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from flows.prefect_workarounds import LaneStarts, outlive_worker
from scripts.freeze import load_task
from scripts.verdict import Status
from tasks.agents import RoleFailed, ask, deterministic
from tasks.agents.experience import update_experience
from tasks.agents.reviewing import review
from tasks.agents.settings import NO_MODEL, agent_identity, take_key
from tasks.check.evaluate import Evaluator
from tasks.check.gpu_pool import DevicePool
from tasks.models.run import LaneConfig, LaneResult, Lease
from tasks.report.render import render
from tasks.run.lane_status import settle
from tasks.run.store import LaneStore, lane_cache_key, now


class LaneFailed(Exception):
    """Marks the lane's flow run failed; its result file holds the reason."""


class LaneSkipped(Exception):
    """The lane has nothing to run here (no model for an author lane, nothing to tune)."""


def _run_name() -> str:
    config = flow_run.parameters.get("config") or {}
    if isinstance(config, LaneConfig):
        config = config.model_dump()
    lane = config.get("lane", {})
    op = Path(config.get("run_dir", "")).name
    return f"lane {lane.get('key', '?')} {lane.get('mode', '')} {op}".strip()


def lane_store(config: LaneConfig) -> LaneStore:
    return LaneStore(Path(config.run_dir) / "lanes" / config.lane.key)


def _role(config: LaneConfig) -> str:
    return "optimizer" if config.lane.mode == "optimize" else "author"


def _skip_without_model(config: LaneConfig) -> None:
    """An author lane with no model has nothing to run: said before it waits for a device,
    which on a one-GPU host could be held by another lane for as long as that lane runs."""
    if _role(config) == "author" and deterministic("author", config.agents):
        raise LaneSkipped(NO_MODEL)


def _work(config: LaneConfig, store: LaneStore, lease: Lease, result: LaneResult, say) -> None:
    spec, _, baseline = load_task(Path(config.task_dir))
    lane = config.lane
    budget_s = config.lane_timeout_s
    sheet = store.root / "sheet.md"
    sheet.write_text(
        render(
            "lane_sheet.md.j2",
            lane=lane,
            spec=spec,
            task_dir=config.task_dir,
            oracle=config.oracle_sha256,
            budget=config.budget,
            budget_s=budget_s,
            workdir=store.work_dir,
            baseline_ms=baseline.medians(),
        )
    )
    store.work_dir.mkdir(parents=True, exist_ok=True)
    evaluator = Evaluator(
        Path(config.task_dir), store, lease.env, config.check_timeout_s, config.samples, say
    )
    role = _role(config)
    searched = deterministic(role, config.agents)  # no model: the search answers
    outcome = ask(
        role,
        inputs={
            "task_dir": config.task_dir,
            "language": lane.language,
            "mode": lane.mode,
            "workdir": store.work_dir,
            "evaluator": evaluator,
            "budget": config.budget,
            "budget_s": budget_s,
            "strategy": config.strategy,
            "seed": config.seed,  # a campaign round's best variant so far (flows/campaign.py)
            "history_dir": (config.seed or {}).get("history_dir"),
        },
        context={
            "op": spec.name,
            "lane": lane.key,
            "language": lane.language,
            "sheet": sheet,
            "workdir": store.work_dir,
            "budget": config.budget,
            "device": lease.device,
        },
        record_dir=store.roles_dir,
        agents=config.agents,
        # the search stops itself at budget_s; its last check may still run to its own timeout
        timeout_s=budget_s + config.check_timeout_s,
    )
    result.candidates = outcome.candidates
    result.claims = outcome.claims
    say(f"{role} answered with {len(outcome.candidates)} checked candidate(s)")
    if outcome.notes:
        say(f"{role}: {outcome.notes}")
    if not outcome.candidates:
        if searched:
            raise LaneSkipped(f"the search has nothing to tune in {lane.language} here")
        raise RoleFailed(role, "answered without a single checked candidate")
    store.progress(state="reviewing")
    result.review = review(
        outcome.candidates,
        f"lane {lane.key}",
        store.roles_dir,
        config.agents,
        config.agent_timeout_s,
        config.agent_retries,
        task_dir=config.task_dir,
        device_env=lease.env,
    )
    say(f"reviewer: {result.review.decision} {result.review.candidate or ''}".rstrip())

    if config.learn == "bakeoff":  # the bake-off writes one curated card after every lane
        return
    try:
        update_experience(result, Path(config.task_dir), store.root, say)
    except Exception as exc:  # the lane's result stands without its card
        say(f"no learned card: {type(exc).__name__}: {exc}")


def harness_failed(result) -> bool:
    return result.verdict.status is Status.HARNESS_ERROR


@flow(name="lane", flow_run_name=_run_name)
def lane(config: LaneConfig) -> LaneResult:
    """Run one lane of a bake-off and write `lanes/<key>/lane_result.json`."""
    take_key()  # an entry point: nothing this process starts from here inherits the key
    outlive_worker()  # a lane deployment's run: its worker may die before it
    LaneStarts.started()
    logger = get_run_logger()
    store = lane_store(config)
    store.root.mkdir(parents=True, exist_ok=True)
    store.clear()
    lane_spec = config.lane

    def say(message: str) -> None:
        logger.info(f"[{lane_spec.key}] {message}")
        store.log(message)

    result = LaneResult(
        key=lane_spec.key,
        language=lane_spec.language,
        mode=lane_spec.mode,
        status="failed",
        reason="did not finish",
        cache_key=lane_cache_key(config, agent_identity()),
        attempt=config.attempt,
        started=now(),
        lane_dir=str(store.root),
    )
    store.progress(
        key=lane_spec.key,
        language=lane_spec.language,
        mode=lane_spec.mode,
        state="waiting",
        budget=config.budget,
        evaluated=0,
        best_speedup=None,
        attempt=config.attempt,
    )
    try:
        _skip_without_model(config)
        pool = DevicePool.from_config(config.pool)
        say(f"waiting for a device among {', '.join(pool.devices.ids)} ({pool.mode})")
        with pool.lease(f"lane {lane_spec.key} {config.attempt}", config.pin_index) as lease:
            result.lease = lease
            store.progress(state="running", device=lease.device, host=lease.host)
            say(f"holding {lease.device} on {lease.host}")
            _work(config, store, lease, result, say)
        broken = [c.candidate.name for c in result.candidates if harness_failed(c)]
        if broken:  # the harness's fault, not the candidates': never kept as a finished lane
            result.reason = (
                f"the harness failed on {len(broken)} candidate(s) ({', '.join(broken[:3])}); "
                "a re-run checks them again"
            )
        else:
            result.finished = now()
            settle(result, config)  # completed, cut by --lane-timeout, or no candidate at all
    except LaneSkipped as exc:
        result.status, result.reason = "skipped", str(exc)
    except RoleFailed as exc:
        result.reason = str(exc)
    except Exception as exc:  # the lane's own fault: recorded; the `with` gave the device back
        result.reason = f"lane crashed: {type(exc).__name__}: {exc}"
    finally:
        result.finished = now()
        if result.status == "failed" and not result.candidates:
            result.candidates = store.saved_candidates()
        store.write_result(result)
        store.progress(state=result.status, reason=result.reason)
        say(f"{result.status}{': ' + result.reason if result.reason else ''}")
    if result.status == "failed":
        raise LaneFailed(result.reason)
    return result


if __name__ == "__main__":
    print(lane(LaneConfig.model_validate(json.loads(Path(sys.argv[1]).read_text()))))
