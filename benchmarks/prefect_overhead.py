"""What Prefect costs per lane: bake-off wall time minus the lanes' own work.

Each lane's optimizer does a known amount of work (it sleeps `--seconds`, timed inside the
responder), Discover's planner names `--lanes` synthetic languages, and the task is frozen
once beforehand, so everything else in the wall time is orchestration: the bake-off, freeze,
discover, lane and report flow runs, the role tasks, the lease, the files and the artifacts.
With one slot the lanes run one after another and overhead = wall - sum(work); with a slot
per lane they run together and overhead = wall - max(work).

    python -m benchmarks.prefect_overhead --lanes 1,4 --seconds 2 --slots 1
    python -m benchmarks.prefect_overhead --lanes 4 --seconds 60 --slots 4
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from kernel_bakeoff.tasks.models.plan import DiscoverPlan, PlanEntry
from kernel_bakeoff.tasks.models.run import SearchOutcome

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "examples" / "rmsnorm_torch"


def plan_lanes(request) -> DiscoverPlan:
    count = int(os.environ["BENCH_LANES"])
    return DiscoverPlan(
        baseline_ms={},
        plan=[PlanEntry(language=f"lang{i}", mode="author") for i in range(1, count)],
    )


def sleep_search(request) -> SearchOutcome:
    started = time.perf_counter()
    time.sleep(float(os.environ["BENCH_SECONDS"]))
    work = time.perf_counter() - started
    (Path(request.record_dir) / "work_seconds").write_text(f"{work}")
    return SearchOutcome(notes=f"slept {work:.3f} s")


AGENTS = {
    "planner": "benchmarks.prefect_overhead:plan_lanes",
    "optimizer": "benchmarks.prefect_overhead:sleep_search",
    "author": "benchmarks.prefect_overhead:sleep_search",
}


def one(lanes: int, seconds: float, slots: int, runs: Path) -> dict:
    from kernel_bakeoff.flows.bakeoff import bakeoff
    from kernel_bakeoff.flows.prefect_workarounds import subflows_without_heartbeats
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    os.environ.update(BENCH_LANES=str(lanes), BENCH_SECONDS=str(seconds))
    run_dir = runs / "bench"  # one frozen task for every run: freezing is not what is measured
    for stale in run_dir.glob("lanes/*/roles/work_seconds"):
        stale.unlink()
    started = time.perf_counter()
    with subflows_without_heartbeats():  # as `bakeoff run` does
        report = bakeoff(
            BakeoffRequest(
                kernel_path=str(KERNEL),
                mode="bakeoff",
                budget=1,
                cpu_slots=slots,
                run_dir=str(run_dir),
                agents=AGENTS,
                fresh=True,
            )
        )
    wall = time.perf_counter() - started
    assert len(report.lanes) == lanes and all(x.status == "completed" for x in report.lanes)
    work = [float(p.read_text()) for p in run_dir.glob("lanes/*/roles/work_seconds")]
    critical = sum(work) if slots == 1 else max(work)
    overhead = wall - critical
    return {
        "lanes": lanes,
        "slots": slots,
        "work_s": round(critical, 3),
        "wall_s": round(wall, 3),
        "overhead_s": round(overhead, 3),
        "overhead_per_lane_s": round(overhead / lanes, 3),
        "overhead_pct": round(100 * overhead / wall, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lanes", default="1,4", help="comma-separated lane counts")
    parser.add_argument("--seconds", type=float, default=2.0, help="work per lane")
    parser.add_argument("--slots", type=int, default=1, help="lanes at once (CPU slots)")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    os.environ["BAKEOFF_LOCK_DIR"] = tempfile.mkdtemp(prefix="bench-locks-")
    runs = Path(tempfile.mkdtemp(prefix="bench-runs-"))
    rows = []
    t0 = time.perf_counter()
    from kernel_bakeoff.tasks.check.freezing import freeze_isolated

    freeze_isolated(KERNEL, runs / "bench" / "task")  # frozen once, outside the timed runs
    one(1, 0.0, 1, runs)  # warm: starts the embedded server, imports, first flow runs
    warmup = time.perf_counter() - t0
    for count in [int(x) for x in args.lanes.split(",")]:
        for _ in range(args.repeat):
            rows.append(one(count, args.seconds, args.slots, runs))
    print(json.dumps({"warmup_s": round(warmup, 2), "runs": rows}, indent=1))
    print(f"\nwarm-up (server start, imports, first runs): {warmup:.1f} s")
    print(
        f"{'lanes':>5} {'slots':>5} {'work s':>8} {'wall s':>8} {'overhead s':>10} "
        f"{'per lane s':>10} {'% wall':>7}"
    )
    for r in rows:
        print(
            f"{r['lanes']:>5} {r['slots']:>5} {r['work_s']:>8.2f} {r['wall_s']:>8.2f} "
            f"{r['overhead_s']:>10.2f} {r['overhead_per_lane_s']:>10.2f} {r['overhead_pct']:>7.1f}"
        )


if __name__ == "__main__":
    main()
