"""The work pools the deployments in prefect.yaml use, created if missing.

    python -m deployments.pools          # against $PREFECT_API_URL

Each pool is of type `process`. A GPU host runs one worker per queue: `default` takes whole
bake-offs (bakeoff/<gpu>, lanes inside, over that host's GPUs; --limit 1) and `lanes` takes
single lanes dispatched from a bake-off elsewhere (lane/<gpu>; --limit = the host's GPUs).
"""

from __future__ import annotations

import sys

POOLS = {
    "gpu-mi300": "AMD Instinct MI300/MI350 hosts (gfx942/gfx950)",
    "gpu-h200": "NVIDIA H100/H200 hosts (sm_90)",
    "cpu-local": "any machine: CPU bake-offs, dispatchers, CPU lanes",
}


def ensure_pools(names=tuple(POOLS)) -> list[str]:
    """Create the missing pools; return the names created."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.workers.process import ProcessWorker

    created = []
    with get_client(sync_client=True) as client:
        for name in names:
            try:
                client.read_work_pool(name)
            except ObjectNotFound:
                client.create_work_pool(
                    WorkPoolCreate(
                        name=name,
                        type="process",
                        description=POOLS[name],
                        base_job_template=ProcessWorker.get_default_base_job_template(),
                    )
                )
                created.append(name)
    return created


def main() -> int:
    created = ensure_pools()
    for name, what in POOLS.items():
        state = "created" if name in created else "exists"
        print(f"{name:<10} {state:<8} {what}")
    print("\nworkers, per host of a pool (default: whole bake-offs; lanes: one per device):")
    for name in POOLS:
        print(f"  deployments/service.sh worker {name} default")
        print(f"  deployments/service.sh worker {name} lanes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
