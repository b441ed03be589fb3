"""The bake-off dispatcher: the one entry point, for every mode.

    optimize  one lane in the input's own language (the default)
    author    one lane in `target_language`, written from scratch
    bakeoff   Freeze -> Discover -> every lane in parallel over the device pool -> Report

Every mode freezes the input first (lanes check against the frozen task) and ends with the
report. In bakeoff mode the input's language always competes first as an optimize lane;
`backends` only adds lanes; otherwise Discover's plan decides. Lanes run as subflows in
threads of this process (`dispatch="local"`), at most one per device, or as runs of a lane
deployment served by GPU workers on other hosts (`dispatch="deployment"`). A lane whose
result from an earlier run has the same cache key is reused unless `fresh`.

Run as `python -m flows.bakeoff KERNEL_PATH [MODE]`, or `bakeoff run` (flows/cli.py).
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

from prefect import flow, get_run_logger, task, unmapped
from prefect.cache_policies import NONE
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from flows.discover import discover
from flows.freeze import freeze
from flows.lane import LaneStarts, lane, lane_store
from flows.report import report
from tasks.agents import check_agents
from tasks.request import BakeoffRequest, resolve_lanes, validate
from tasks.results import LaneConfig, LaneResult, Report
from tasks.run_store import RunStore, default_run_dir, lane_cache_key, now

MAX_LANES_AT_ONCE = 64


def _run_name() -> str:
    params = flow_run.parameters
    return f"{Path(str(params.get('kernel_path', '?'))).name} {params.get('mode', 'optimize')}"


def _failed(config: LaneConfig, reason: str) -> LaneResult:
    return LaneResult(
        key=config.lane.key,
        language=config.lane.language,
        mode=config.lane.mode,
        status="failed",
        reason=reason,
        cache_key=lane_cache_key(config),
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
    earlier = store.reusable(lane_cache_key(config))
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


@task(name="run-lane", task_run_name="lane {config.lane.key}", cache_policy=NONE)
def run_lane(
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


@flow(
    name="bakeoff",
    flow_run_name=_run_name,
    task_runner=ThreadPoolTaskRunner(max_workers=MAX_LANES_AT_ONCE),
)
def bakeoff(
    kernel_path: str,
    mode: str = "optimize",
    target_language: str | None = None,
    backends: list[str] | None = None,
    budget: int = 4,
    gpu_ids: list[str] | None = None,
    gpu_mode: str = "pool",
    cpu_slots: int | None = None,
    fresh: bool = False,
    dispatch: str = "local",
    run_dir: str | None = None,
    runs_root: str = "runs",
    agents: dict[str, str] | None = None,
    strategy: str = "auto",
    agent_timeout_s: float | None = None,
    agent_retries: int | None = None,
    lane_timeout_s: float = 3600.0,
    check_timeout_s: float = 300.0,
    samples: int | None = None,
    lane_deployment: str = "lane/local",
) -> Report:
    """Freeze, (discover,) run the lanes and report; see the module docstring for the modes."""
    logger = get_run_logger()
    params = {k: v for k, v in locals().items() if k in BakeoffRequest.model_fields}
    req = validate(BakeoffRequest(**{**params, "agents": agents or {}}))
    check_agents(req.agents)
    run_root = Path(req.run_dir or default_run_dir(Path(kernel_path), Path(runs_root))).resolve()
    store = RunStore(run_root)
    attempt = str(flow_run.id or uuid.uuid4())
    store.set_phase("freeze", reset=True, attempt=attempt, mode=req.mode, lanes=[])
    pool = req.pool
    frozen = freeze(str(Path(kernel_path).resolve()), str(store.task_dir), pool)
    discovered, warnings = None, []
    if req.mode == "bakeoff":
        store.set_phase("discover")
        try:
            discovered = discover(
                frozen.task_dir,
                str(run_root),
                op=frozen.op,
                backends=req.backends,
                pool=pool,
                agents=req.agents,
                check_timeout_s=req.check_timeout_s,
                samples=req.samples,
                agent_timeout_s=req.agent_timeout_s,
                agent_retries=req.agent_retries,
                fresh=req.fresh,
            )
        except Exception as exc:
            warnings.append(f"Discover failed ({type(exc).__name__}: {exc}); planned without it")
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
    configs = [
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
            pool=pool,
            pin_index=i,
            attempt=attempt,
        )
        for i, spec in enumerate(specs)
    ]
    logger.info(
        f"{len(configs)} lane(s): " + ", ".join(f"{c.lane.key}:{c.lane.mode}" for c in configs)
    )
    store.set_phase("lanes", lanes=[c.lane.key for c in configs])
    reused = {c.lane.key: None if req.fresh else reuse(c) for c in configs}
    for key, found in reused.items():
        if found is not None:
            logger.info(f"lane {key}: reusing the completed result of an earlier run")
    to_run = [c for c in configs if reused[c.lane.key] is None]
    futures = (
        run_lane.map(
            to_run,
            dispatch=unmapped(req.dispatch),
            deployment=unmapped(req.lane_deployment),
            starts=unmapped(LaneStarts(len(to_run))),
        )
        if to_run
        else []
    )
    ran = {c.lane.key: f.result() for c, f in zip(to_run, futures)}
    results = [reused[c.lane.key] or ran[c.lane.key] for c in configs]
    store.set_phase("report")
    final = report(
        str(kernel_path),
        frozen.op,
        req.mode,
        str(run_root),
        frozen.task_dir,
        results,
        discovered,
        warnings,
    )
    store.set_phase("done", report=final.report_path)
    return final


if __name__ == "__main__":
    done = bakeoff(sys.argv[1], *(sys.argv[2:3] or []))
    print(Path(done.report_path).read_text())
