"""Freeze flow: the input kernel becomes one immutable oracle, the denominator of every speedup.

A directory that no input format reads (only a kernel.py, say) first gets its op spec from the
oracle_freezer role, here and nowhere else in the flows (tasks/agents/freezer.py): the model's
op.toml goes beside a copy of the sources under `<specs_root>/specs/`, that copy is frozen, and
the input is left as it was. Without a model the run fails with one line saying what is missing.

Run as `python -m kernel_bakeoff.flows.freeze KERNEL_PATH OUT`.
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NONE

from kernel_bakeoff.scripts.freeze import load_task
from kernel_bakeoff.tasks.check.freezing import freeze_isolated
from kernel_bakeoff.tasks.check.quiet_baseline import retime_while_noisy
from kernel_bakeoff.tasks.engine.model_room import model_room
from kernel_bakeoff.tasks.models.run import PoolConfig
from kernel_bakeoff.tasks.run.input_identity import Frozen, SpecSource, needs_spec
from kernel_bakeoff.tasks.run.key import take_key
from kernel_bakeoff.tasks.run.settings import enter


@task(name="write-op-spec", cache_policy=NONE)
def op_spec_task(kernel_path: str, specs_root: str) -> SpecSource:
    """oracle_freezer's op spec for a directory that has none (reused for the same sources);
    without a model, the model's room says in one line what the directory lacks."""
    return model_room("source_for")(kernel_path, specs_root)


@task(name="freeze-kernel", cache_policy=NONE)
def freeze_task(
    kernel_path: str, out: str, pool: PoolConfig | None = None, source: SpecSource | None = None
) -> Frozen:
    task_dir = freeze_isolated(Path(kernel_path), Path(out), pool)
    # before any candidate races: a noisy baseline re-timed, or said (a deployment's run has
    # no `bakeoff run` before it to do this)
    again = partial(freeze_isolated, Path(kernel_path), Path(out), pool)
    retime_while_noisy(task_dir, again, get_run_logger().warning)
    return Frozen.read(task_dir, source or SpecSource(input=kernel_path, frozen_from=kernel_path))


@flow(name="freeze", flow_run_name="freeze {kernel_path}")
def freeze(
    kernel_path: str, out: str, pool: PoolConfig | None = None, specs_root: str | None = None
) -> Frozen:
    """Freeze `kernel_path` into `out` on a leased device (kept when already frozen from it);
    a directory without a spec gets one first, staged under `specs_root` (default: beside
    `out`)."""
    take_key()  # an entry point: nothing this process starts from here inherits the key
    enter()  # the BAKEOFF_* settings, read once for this flow's deep code (tasks/run/settings.py)
    logger = get_run_logger()
    source = None
    if needs_spec(Path(kernel_path)):  # before a device is leased: the model takes its time
        root = specs_root or str(Path(out).resolve().parent)
        source = op_spec_task(kernel_path, root)
        logger.info(source.said)
    frozen = freeze_task(source.frozen_from if source else kernel_path, out, pool, source)
    spec = load_task(Path(frozen.task_dir))[0]
    if spec.degenerate:
        logger.warning(spec.degenerate.message)
    logger.info(
        f"frozen {frozen.op} ({frozen.language}) into {frozen.task_dir}, "
        f"oracle {frozen.oracle_sha256[:12]}; baseline "
        + ", ".join(f"{k} {v:.4g} ms" for k, v in frozen.baseline_ms.items())
    )
    return frozen


if __name__ == "__main__":
    print(freeze(sys.argv[1], sys.argv[2]).model_dump_json(indent=1))
