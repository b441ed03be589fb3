"""The bake-off dispatcher: the one entry point, for every mode.

    optimize  one lane in the input's own language (the default)
    author    one lane in `target_language`, written from scratch
    bakeoff   Freeze -> Discover -> every lane in parallel over the device pool -> Report

Every mode freezes the input first (lanes check against the frozen task; a directory without
an op spec gets one from oracle_freezer there, flows/freeze.py) and ends with the report. In
bakeoff mode the input's language always competes first as an optimize lane;
`backends` only adds lanes; otherwise Discover's plan decides. Lanes run as subflows in
threads of this process (`dispatch="local"`), at most one per device, or as runs of a lane
deployment served by GPU workers on other hosts (`dispatch="deployment"`). A lane whose
result from an earlier run has the same cache key is reused unless `fresh`.

Its parameter is a `BakeoffRequest` (tasks/models/request.py), as a lane's is a `LaneConfig`: a
deployment run passes `{"request": {"kernel_path": ..., "mode": ...}}`, and the flow opens the
run (validates, locks, freezes: flows/opening.py); `bakeoff run` opens it in its own process
and hands the flow the `Opened` run as its second parameter. Run as
`python -m kernel_bakeoff.flows.bakeoff KERNEL_PATH [MODE]`, or `bakeoff run` (flows/cli.py).
"""

from __future__ import annotations

import contextvars
import shutil
import sys
import threading
import uuid
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from kernel_bakeoff.flows import phases
from kernel_bakeoff.flows.discover import discover
from kernel_bakeoff.flows.freeze import freeze
from kernel_bakeoff.flows.lane import lane
from kernel_bakeoff.flows.opening import Opened, check_opened, run_dir_of, validate
from kernel_bakeoff.flows.prefect_workarounds import (
    LaneStarts,
    outlive_worker,
    subflows_without_heartbeats,
)
from kernel_bakeoff.flows.report import publish, report
from kernel_bakeoff.scripts.isolation import warning
from kernel_bakeoff.tasks.apply.hook import apply_and_record
from kernel_bakeoff.tasks.engine.lane import lane_store
from kernel_bakeoff.tasks.engine.model_room import by_model, identity, model_room
from kernel_bakeoff.tasks.models.progress import RunProgress
from kernel_bakeoff.tasks.models.request import BakeoffRequest, parse_request, resolve_lanes
from kernel_bakeoff.tasks.models.run import LaneConfig, LaneResult, Report
from kernel_bakeoff.tasks.run.directory import RunStore, lane_cache_key, now
from kernel_bakeoff.tasks.run.input_identity import Frozen, record_in
from kernel_bakeoff.tasks.run.key import model_configured, take_key
from kernel_bakeoff.tasks.run.lock import run_lock
from kernel_bakeoff.tasks.run.settings import enter

MAX_LANES_AT_ONCE = 64  # lanes beyond the devices wait for a lease anyway


def _run_name() -> str:
    request = flow_run.parameters.get("request") or {}
    if isinstance(request, BakeoffRequest):
        request = request.model_dump()
    return f"{Path(str(request.get('kernel_path', '?'))).name} {request.get('mode', 'optimize')}"


def _failed(config: LaneConfig, reason: str) -> LaneResult:
    return LaneResult(
        key=config.lane.key,
        language=config.lane.language,
        mode=config.lane.mode,
        status="failed",
        reason=reason,
        cache_key=lane_cache_key(config, identity()),
        attempt=config.attempt,
        finished=now(),
        lane_dir=str(lane_store(config).root),
    )


def deployment_env(config: LaneConfig) -> tuple[dict[str, str], LaneConfig]:
    """Environment for a lane's flow run on a worker; pinned devices go in as visible devices."""
    env = {"BAKEOFF_LANE": config.lane.key}
    pool = config.pool
    if pool.gpu_mode == "pin" and pool.gpu_ids:
        device = pool.gpu_ids[(config.pin_index or 0) % len(pool.gpu_ids)]
        env.update(CUDA_VISIBLE_DEVICES=device, HIP_VISIBLE_DEVICES=device)
        config = config.model_copy(update={"pool": pool.model_copy(update={"gpu_ids": None})})
    return env, config


def _via_deployment(config: LaneConfig, deployment: str) -> LaneResult:
    from prefect.deployments import run_deployment

    env, remote = deployment_env(config)
    run = run_deployment(
        name=deployment,
        parameters={"config": remote.model_dump(mode="json")},
        job_variables={"env": env},
        flow_run_name=f"lane {config.lane.key} {Path(config.run_dir).name}",
        timeout=None,
    )
    found = lane_store(config).load_result()
    if found is not None and found.attempt == config.attempt:
        return found
    state = run.state
    what = f"{state.type.value}: {state.message}" if state else "no state"
    return _failed(config, f"lane flow run {run.name} ended without a result ({what})")


def reuse(config: LaneConfig) -> LaneResult | None:
    """The completed result of an earlier run with the same cache key, marked reused."""
    store = lane_store(config)
    earlier = store.reusable(lane_cache_key(config, identity()))
    if earlier is None:
        return None
    store.progress(
        key=config.lane.key,
        language=config.lane.language,
        mode=config.lane.mode,
        state="reused",
        budget=config.budget,
        evaluated=len(earlier.candidates),
        device=earlier.lease.device if earlier.lease else None,
        attempt=config.attempt,
    )
    return earlier.model_copy(update={"reused": True})


def dispatch_lane(
    config: LaneConfig, dispatch: str, deployment: str, starts: LaneStarts | None
) -> LaneResult:
    """Run a lane here (a subflow) or as a deployment run; never raises."""
    try:
        if dispatch == "deployment":
            return _via_deployment(config, deployment)
        with starts.starting():
            return lane(config)
    except Exception as exc:
        found = lane_store(config).load_result()
        if found is not None and found.attempt == config.attempt:
            return found
        return _failed(config, f"lane ended without a result: {type(exc).__name__}: {exc}")


def _discover(opened: Opened, frozen: Frozen, warnings: list[str]):
    try:
        return discover(opened, frozen)
    except Exception as exc:
        warnings.append(f"Discover failed ({type(exc).__name__}: {exc}); planned without it")
        return None


def _configs(req: BakeoffRequest, frozen, specs, run_root: Path, attempt: str):
    return [
        LaneConfig(
            run_dir=str(run_root),
            task_dir=frozen.task_dir,
            oracle_sha256=frozen.oracle_sha256,
            lane=spec,
            budget=req.budget,
            lane_timeout_s=req.lane_timeout_s,
            check_timeout_s=req.check_timeout_s,
            samples=req.samples,
            strategy=req.strategy,
            agents=req.agents,
            agent_timeout_s=req.agent_timeout_s,
            agent_retries=req.agent_retries,
            pool=req.pool,
            pin_index=i,
            attempt=attempt,
            learn="bakeoff" if req.mode == "bakeoff" else "lane",
        )
        for i, spec in enumerate(specs)
    ]


def _reusable(req: BakeoffRequest, configs: list[LaneConfig], logger) -> dict:
    """Lane key -> the completed result of an earlier run to reuse, or None."""
    reused = {c.lane.key: None if req.fresh else reuse(c) for c in configs}
    for key, found in reused.items():
        if found is not None:
            logger.info(f"lane {key}: reusing the completed result of an earlier run")
    return reused


def _run_lanes(req: BakeoffRequest, configs: list[LaneConfig], reused: dict) -> list[LaneResult]:
    """Every lane's result, in order: reused ones as they were, the others run now."""
    to_run = [c for c in configs if reused[c.lane.key] is None]
    starts = LaneStarts(len(to_run))
    # Plain threads, each with this flow run's context, so every lane is a subflow of it. A
    # Prefect task around each lane would add a burst of task-run writes just as the lane
    # subflows are created, which the embedded SQLite server answers with 2 s retries.
    # Daemon threads: a SIGTERM or Ctrl-C ends this process at once, never held up by lanes
    # still running (an executor's threads would be joined at exit, for as long as a lane takes).
    ran: dict[str, LaneResult] = {}
    slots = threading.BoundedSemaphore(MAX_LANES_AT_ONCE)

    def one(config: LaneConfig) -> None:
        with slots:
            ran[config.lane.key] = dispatch_lane(config, req.dispatch, req.lane_deployment, starts)

    threads = [
        threading.Thread(
            target=contextvars.copy_context().run,
            args=(one, c),
            name=f"lane-{c.lane.key}",
            daemon=True,
        )
        for c in to_run
    ]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.5)  # short waits: a signal's handler runs in this thread between them
    return [
        reused[c.lane.key] or ran.get(c.lane.key) or _failed(c, "the lane's thread ended early")
        for c in configs
    ]


@flow(name="bakeoff", flow_run_name=_run_name)
def bakeoff(request: BakeoffRequest, opened: Opened | None = None) -> Report:
    """Freeze, (discover,) run the lanes and report; see the module docstring for the modes.
    `opened`: the run `bakeoff run` opened in this process (validated, locked, frozen), whose
    request is `request`; without it the flow opens the run itself (flows/opening.py)."""
    take_key()  # an entry point: nothing this process starts from here inherits the key
    enter()  # the BAKEOFF_* settings, read once for this flow's deep code (tasks/run/settings.py)
    outlive_worker()  # a deployment's run: its worker may die before it
    if opened is not None:
        opened = check_opened(opened)
        final, discovered = _opened_run(opened)
    else:
        req = validate(request)
        opened = Opened(request=req, run_dir=str(run_dir_of(req)))
        with run_lock(Path(opened.run_dir)):  # one bake-off at a time here (tasks/run/lock.py)
            final, discovered = _opened_run(opened)
    logger = get_run_logger()
    publish(final, scope=artifact_scope())  # on this run, the one a user opens
    logger.info(phases.winner_line(final))
    if opened.request.apply_to_original:  # the winner onto a new branch of the input's repository
        apply_and_record(final, discovered, logger)
    RunStore(Path(opened.run_dir)).set_phase("done", report=final.report_path)
    return final


def author_plan(discovered, task_dir: str, run_dir: str, agents, say):
    """Discover's outcome with op_benchmarker's author lanes where a model (or a drop-in)
    answers it; as it is, said in one line, where none does (the model's room not loaded)."""
    if not by_model("op_benchmarker", agents):
        say("op_benchmarker: no model configured; the author lanes are Discover's plan")
        return discovered
    return model_room("plan_authors")(discovered, task_dir, run_dir, agents, say)


def _opened_run(opened: Opened):
    """The bake-off of an opened run, up to its report: (the report, Discover's outcome)."""
    logger = get_run_logger()
    req, run_root = opened.request, Path(opened.run_dir)
    if req.agents:  # the operator's drop-ins: roles that exist, callables that load
        model_room("check_agents")(req.agents)

    if unsafe := warning():
        logger.warning(unsafe)
    store = RunStore(run_root)
    attempt = str(flow_run.id or uuid.uuid4())
    previous = store.progress()
    if previous.phase == "starting":  # `bakeoff run` marked it: the one before counts
        previous = previous.previous or RunProgress()
    store.set_phase("freeze", reset=True, attempt=attempt, mode=req.mode, lanes=[])
    if req.fresh:  # verdicts kept for reuse within the run directory (tasks.check.evaluate)
        shutil.rmtree(run_root / "checked", ignore_errors=True)
    with subflows_without_heartbeats():
        frozen = opened.frozen or freeze(
            str(Path(req.kernel_path).resolve()),
            str(store.task_dir),
            req.pool,
            specs_root=str(Path(req.runs_root).resolve()),
        )
        if frozen.source.written:  # oracle_freezer wrote the spec: kept here, said once
            store.set_phase("freeze", spec=record_in(run_root, frozen.source))
            logger.info(f"the op spec oracle_freezer wrote is kept as {run_root / 'op.toml'}")
        logger.info(phases.frozen_line(frozen))
        discovered, warnings = None, []
        if req.mode == "bakeoff":
            store.set_phase("discover")
            discovered = _discover(opened, frozen, warnings)
            if discovered is not None:
                discovered = author_plan(
                    discovered, frozen.task_dir, str(run_root), req.agents, logger.info
                )
            logger.info(phases.discover_line(discovered))
        specs, plan_warnings = resolve_lanes(
            frozen.language,
            req.mode,
            target_language=req.target_language,
            backends=req.backends,
            plan=discovered.plan if discovered else None,
        )
        warnings += plan_warnings
        for w in warnings:
            logger.warning(w)
        configs = _configs(req, frozen, specs, run_root, attempt)
        if req.seed:  # a campaign round (flows/campaign.py): lanes start from the best so far
            configs = [c.model_copy(update={"seed": req.seed}) for c in configs]
        logger.info(
            f"{len(configs)} lane(s): " + ", ".join(f"{c.lane.key}:{c.lane.mode}" for c in configs)
        )
        store.set_phase("lanes", lanes=[c.lane.key for c in configs])
        reused = _reusable(req, configs, logger)
        said = phases.resumed_line(previous, attempt, [k for k, v in reused.items() if v])
        if said:
            logger.info(said)
        results = _run_lanes(req, configs, reused)
        for result in results:
            logger.info(phases.lane_line(result))
        if req.mode == "bakeoff" and model_configured():  # one curated card for the bake-off
            model_room("curate_bakeoff")(results, frozen.task_dir, logger.info)
        store.set_phase("report")
        final = report(opened, frozen, results, discovered, warnings, publish_artifacts=False)
    return final, discovered


def artifact_scope() -> str:
    """The deployment this run belongs to (its own, or the nightly one that started it), else
    `cli`: each keeps its own artifact history."""
    from prefect.runtime import deployment

    return deployment.name or "cli"


if __name__ == "__main__":
    args = dict(zip(("kernel_path", "mode"), sys.argv[1:3], strict=False))
    done = bakeoff(parse_request(args))
    print(Path(done.report_path).read_text())
