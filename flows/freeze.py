"""Freeze flow: the input kernel becomes one immutable oracle, the denominator of every speedup.

Run as `python -m flows.freeze KERNEL_PATH OUT`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NONE
from pydantic import BaseModel

from scripts import manifest
from scripts.freeze import load_task
from tasks.freezing import freeze_isolated
from tasks.results import PoolConfig


class Frozen(BaseModel):
    task_dir: str
    oracle_sha256: str
    op: str
    language: str
    baseline_ms: dict[str, float]


@task(name="freeze-kernel", cache_policy=NONE)
def freeze_task(kernel_path: str, out: str, pool: PoolConfig | None = None) -> Frozen:
    task_dir = freeze_isolated(Path(kernel_path), Path(out), pool)
    spec, _, baseline = load_task(task_dir)
    oracle = json.loads((task_dir / manifest.MANIFEST).read_text())["oracle_sha256"]
    return Frozen(
        task_dir=str(task_dir),
        oracle_sha256=oracle,
        op=spec.name,
        language=spec.language.lower(),
        baseline_ms={k: v["median_ms"] for k, v in baseline["workloads"].items()},
    )


@flow(name="freeze", flow_run_name="freeze {kernel_path}")
def freeze(kernel_path: str, out: str, pool: PoolConfig | None = None) -> Frozen:
    """Freeze `kernel_path` into `out` on a leased device (kept when already frozen from it)."""
    frozen = freeze_task(kernel_path, out, pool)
    get_run_logger().info(
        f"frozen {frozen.op} ({frozen.language}) into {frozen.task_dir}, "
        f"oracle {frozen.oracle_sha256[:12]}; baseline "
        + ", ".join(f"{k} {v:.4g} ms" for k, v in frozen.baseline_ms.items())
    )
    return frozen


if __name__ == "__main__":
    print(freeze(sys.argv[1], sys.argv[2]).model_dump_json(indent=1))
