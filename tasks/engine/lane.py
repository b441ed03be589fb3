"""One lane, start to end: lease a device, open the frozen task, build the checker, have the
lane's proposer answer, judge the best, keep the result. Prefect-free: flows/lane.py runs it
as a flow (its logger, its run's name, outliving the worker) and raises when it failed.

Without a model an author lane is skipped, saying so; a lane that checked nothing is never
`completed`. Whatever happens, the result is written under the lane's directory and the
device is given back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.check.evaluate import Evaluator
from kernel_bakeoff.tasks.check.gpu_pool import DevicePool
from kernel_bakeoff.tasks.engine.model_room import by_model, identity, model_room
from kernel_bakeoff.tasks.engine.proposers import Judging, ProposerFailed, Work, judge, propose_lane
from kernel_bakeoff.tasks.models.run import LaneConfig, LaneResult, Lease
from kernel_bakeoff.tasks.report.render import render
from kernel_bakeoff.tasks.run.directory import LaneStore, lane_cache_key, now
from kernel_bakeoff.tasks.run.key import NO_MODEL, model_configured
from kernel_bakeoff.tasks.run.lane_status import settle

Say = Callable[[str], None]


class LaneSkipped(Exception):
    """The lane has nothing to run here (no model for an author lane, nothing to tune)."""


def lane_store(config: LaneConfig) -> LaneStore:
    return LaneStore(Path(config.run_dir) / "lanes" / config.lane.key)


def role_of(config: LaneConfig) -> str:
    return "optimizer" if config.lane.mode == "optimize" else "author"


def _skip_without_model(config: LaneConfig) -> None:
    """An author lane with no model has nothing to run: said before it waits for a device,
    which on a one-GPU host could be held by another lane for as long as that lane runs."""
    if role_of(config) == "author" and not by_model("author", config.agents):
        raise LaneSkipped(NO_MODEL)


def _sheet(config: LaneConfig, store: LaneStore, spec, baseline) -> Path:
    sheet = store.root / "sheet.md"
    sheet.write_text(
        render(
            "lane_sheet.md.j2",
            lane=config.lane,
            spec=spec,
            task_dir=config.task_dir,
            oracle=config.oracle_sha256,
            budget=config.budget,
            budget_s=config.lane_timeout_s,
            workdir=store.work_dir,
            baseline_ms=baseline.medians(),
        )
    )
    return sheet


def _work(config: LaneConfig, store: LaneStore, lease: Lease, result: LaneResult, say) -> None:
    # opened once here: the oracle this lane was configured with, or the lane fails saying so
    task = FrozenTask.open(config.task_dir, config.oracle_sha256)
    spec, lane = task.spec, config.lane
    sheet = _sheet(config, store, spec, task.baseline)
    store.work_dir.mkdir(parents=True, exist_ok=True)
    evaluator = Evaluator(task, store, lease.env, config.check_timeout_s, config.samples, say)
    role = role_of(config)
    modelled = by_model(role, config.agents)
    outcome = propose_lane(
        Work(
            role=role,
            task=task,
            workdir=store.work_dir,
            evaluator=evaluator,
            inputs={
                "language": lane.language,
                "mode": lane.mode,
                "budget": config.budget,
                "budget_s": config.lane_timeout_s,
                "strategy": config.strategy,
                "seed": config.seed,  # a campaign round's best variant so far
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
            # the search stops itself at the lane's budget; its last check may still run to
            # its own timeout
            timeout_s=config.lane_timeout_s + config.check_timeout_s,
        )
    )
    result.candidates = outcome.candidates
    result.claims = outcome.claims
    say(f"{role} answered with {len(outcome.candidates)} checked candidate(s)")
    if outcome.notes:
        say(f"{role}: {outcome.notes}")
    if not outcome.candidates:
        if not modelled:
            raise LaneSkipped(f"the search has nothing to tune in {lane.language} here")
        raise ProposerFailed(f"{role}: answered without a single checked candidate")
    store.progress(state="reviewing")
    result.review = judge(
        outcome.candidates,
        Judging(
            subject=f"lane {lane.key}",
            record_dir=store.roles_dir,
            agents=config.agents,
            timeout_s=config.agent_timeout_s,
            retries=config.agent_retries,
            task_dir=config.task_dir,
            device_env=lease.env,
        ),
    )
    say(f"reviewer: {result.review.decision} {result.review.candidate or ''}".rstrip())
    if config.learn == "bakeoff" or not model_configured():  # the bake-off curates one card
        return
    try:
        model_room("learn")(result, Path(config.task_dir), store.root, say)
    except Exception as exc:  # the lane's result stands without its card
        say(f"no learned card: {type(exc).__name__}: {exc}")


def harness_failed(result) -> bool:
    return result.verdict.status is Status.HARNESS_ERROR


def run_lane(config: LaneConfig, store: LaneStore, say: Say) -> LaneResult:
    """Run one lane and write `lanes/<key>/lane_result.json`; a failed lane's result says why."""
    lane_spec = config.lane
    store.root.mkdir(parents=True, exist_ok=True)
    store.clear()
    result = LaneResult(
        key=lane_spec.key,
        language=lane_spec.language,
        mode=lane_spec.mode,
        status="failed",
        reason="did not finish",
        cache_key=lane_cache_key(config, identity()),
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
    except ProposerFailed as exc:  # a model or a drop-in gave no valid answer
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
    return result
