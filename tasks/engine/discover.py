"""Discover on the lane engine: a lane whose proposer is the backends. It leases one device,
checks what exists for the op (the frozen input first, then every backend's proposals) with a
checker that keeps the finished checks of an interrupted run, has the reviewer judge the best
one measured, and keeps the outcome under `discover/`, reused by a re-run with the same key.
Prefect-free: flows/discover.py runs it as a flow.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.backends import languages
from kernel_bakeoff.tasks.check.gpu_pool import DevicePool
from kernel_bakeoff.tasks.discover.resume import ResumingEvaluator, finished_checks
from kernel_bakeoff.tasks.engine.proposers import Judging, Work, judge, propose_plan
from kernel_bakeoff.tasks.models.request import BakeoffRequest
from kernel_bakeoff.tasks.models.run import DiscoverOutcome, PoolConfig
from kernel_bakeoff.tasks.run.directory import (
    LaneStore,
    code_version,
    read_json,
    task_identity,
    write_json,
)
from kernel_bakeoff.tasks.run.input_identity import Frozen

Say = Callable[[str], None]


def discover_key(task_dir: str, backends, agents, check_timeout_s, samples) -> str:
    payload = {
        "task": task_identity(Path(task_dir)),
        "backends": backends,
        "agents": agents,
        "check_timeout_s": check_timeout_s,
        "samples": samples,
        "code": code_version(),
    }
    return manifest.cache_key(payload, 24)


def run_discover(
    req: BakeoffRequest, run_dir: str, frozen: Frozen, timeout_s: float, say: Say, warn: Say
) -> DiscoverOutcome:
    """What exists for `frozen`'s op, measured, and the plan of the lanes."""
    task_dir, op = frozen.task_dir, frozen.op
    backends, agents = req.backends, req.agents or {}
    store = LaneStore(Path(run_dir) / "discover")
    outcome_path = store.root / "outcome.json"
    key = discover_key(task_dir, backends, agents, req.check_timeout_s, req.samples)
    earlier = read_json(outcome_path)
    if earlier and not req.fresh and earlier.get("cache_key") == key:
        say("reusing Discover's outcome from an earlier run with the same key")
        return DiscoverOutcome.model_validate(earlier).model_copy(update={"reused": True})
    kept = {} if req.fresh else finished_checks(store, key)  # a Discover killed half-way
    if kept:
        say(f"resuming Discover: {len(kept)} finished check(s) of the interrupted run kept")
    store.clear()
    outcome_path.unlink(missing_ok=True)
    task = FrozenTask.open(task_dir, frozen.oracle_sha256)  # opened once, for every check
    spec = task.spec
    device_pool = DevicePool.from_config(req.pool or PoolConfig())
    with device_pool.lease(f"discover {op}") as lease:
        say(f"measuring existing implementations on {lease.device}")
        evaluator = ResumingEvaluator(
            task,
            store,
            lease.env,
            req.check_timeout_s,
            req.samples,
            earlier=kept,
            key=key,
        )
        plan = propose_plan(
            Work(
                role="planner",
                task=task,
                workdir=store.work_dir,
                evaluator=evaluator,
                inputs={"backends": backends},
                context={
                    "op": spec.name,
                    "kind": spec.kind.value,
                    "task_dir": task_dir,
                    "language": spec.language,
                    "baseline_ms": frozen.baseline_ms,
                    "languages": languages(),
                    "backends": backends,
                },
                record_dir=store.roles_dir,
                agents=agents,
                timeout_s=timeout_s,
            )
        )
        found = plan.measured + ([plan.env_candidate] if plan.env_candidate else [])
        verdict = judge(
            found,
            Judging(
                subject="Discover's measurements",
                record_dir=store.roles_dir,
                agents=agents,
                timeout_s=req.agent_timeout_s,
                retries=req.agent_retries,
                task_dir=task_dir,
            ),
        )
    broken = [r.candidate.name for r in plan.measured if r.verdict.status is Status.HARNESS_ERROR]
    if broken:  # kept for this run's report, but a re-run measures again
        warn(f"the harness failed on {', '.join(broken)}; a re-run measures again")
    outcome = DiscoverOutcome(plan=plan, review=verdict, cache_key="" if broken else key)
    write_json(outcome_path, outcome)
    return outcome
