"""Discover flow: what already exists for the op, measured on the frozen oracle, and the plan.

A thin flow: it leases one device, asks the planner role (with no model, tasks.discover.plan.discover
measures existing implementations through the harness) and has the reviewer look at the best
one measured. The outcome is kept under `discover/` and reused by a re-run with the same key.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from flows.opening import Opened
from scripts import manifest
from scripts.baseline import FrozenBaseline
from scripts.spec import OpSpec
from scripts.verdict import Status
from tasks.agents import ask
from tasks.agents.reviewing import review
from tasks.agents.settings import take_key
from tasks.backends import languages
from tasks.check.gpu_pool import DevicePool
from tasks.discover.resume import ResumingEvaluator, finished_checks
from tasks.discover.table import matched_line
from tasks.models.run import DiscoverOutcome, PoolConfig
from tasks.run.input_identity import Frozen
from tasks.run.store import LaneStore, code_version, read_json, task_identity, write_json


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


def _run_name() -> str:
    frozen = flow_run.parameters.get("frozen") or {}
    return f"discover {frozen.op if isinstance(frozen, Frozen) else frozen.get('op', '?')}"


@flow(name="discover", flow_run_name=_run_name)
def discover(run: Opened, frozen: Frozen, timeout_s: float = 3600.0) -> DiscoverOutcome:
    """Measure what exists for `frozen`'s op, for the opened `run`, and plan its lanes."""
    take_key()  # an entry point: nothing this process starts from here inherits the key
    req, task_dir, run_dir, op = run.request, frozen.task_dir, run.run_dir, frozen.op
    backends, agents = req.backends, req.agents or {}
    logger = get_run_logger()
    store = LaneStore(Path(run_dir) / "discover")
    outcome_path = store.root / "outcome.json"
    key = discover_key(task_dir, backends, agents, req.check_timeout_s, req.samples)
    earlier = read_json(outcome_path)
    if earlier and not req.fresh and earlier.get("cache_key") == key:
        logger.info("reusing Discover's outcome from an earlier run with the same key")
        return DiscoverOutcome.model_validate(earlier).model_copy(update={"reused": True})
    kept = {} if req.fresh else finished_checks(store, key)  # a Discover killed half-way
    if kept:
        logger.info(f"resuming Discover: {len(kept)} finished check(s) of the interrupted run kept")
    store.clear()
    outcome_path.unlink(missing_ok=True)
    spec = OpSpec.model_validate_json((Path(task_dir) / "spec.json").read_text())
    baseline = FrozenBaseline.read(Path(task_dir))
    device_pool = DevicePool.from_config(req.pool or PoolConfig())
    with device_pool.lease(f"discover {op}") as lease:
        logger.info(f"measuring existing implementations on {lease.device}")
        evaluator = ResumingEvaluator(
            Path(task_dir),
            store,
            lease.env,
            req.check_timeout_s,
            req.samples,
            earlier=kept,
            key=key,
        )
        plan = ask(
            "planner",
            inputs={
                "task_dir": task_dir,
                "workdir": store.work_dir,
                "evaluator": evaluator,
                "backends": backends,
            },
            context={
                "op": spec.name,
                "kind": spec.kind.value,
                "task_dir": task_dir,
                "language": spec.language,
                "baseline_ms": baseline.medians(),
                "languages": languages(),
                "backends": backends,
            },
            record_dir=store.roles_dir,
            agents=agents,
            timeout_s=timeout_s,
        )
        found = plan.measured + ([plan.env_candidate] if plan.env_candidate else [])
        verdict = review(
            found,
            "Discover's measurements",
            store.roles_dir,
            agents,
            req.agent_timeout_s,
            req.agent_retries,
            task_dir=task_dir,
        )
    broken = [r.candidate.name for r in plan.measured if r.verdict.status is Status.HARNESS_ERROR]
    if broken:  # kept for this run's report, but a re-run measures again
        logger.warning(f"the harness failed on {', '.join(broken)}; a re-run measures again")
    outcome = DiscoverOutcome(plan=plan, review=verdict, cache_key="" if broken else key)
    write_json(outcome_path, outcome)
    logger.info(matched_line(plan))
    entries = ", ".join(f"{e.language or '(unnamed)'}:{e.mode}" for e in plan.plan)
    logger.info(f"plan: {entries or 'empty'}; reviewer: {verdict.decision}")
    return outcome
