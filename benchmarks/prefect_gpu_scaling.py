"""Four equal lanes on two GPUs against one: does the device pool really run lanes side by side?

Each lane's optimizer runs the same fixed GPU workload (an fp32 matmul loop, TF32 off) in a
subprocess that sees only the lane's leased device through the visible-devices variable. The
bake-off runs twice on Prefect's embedded server, with one device and with two; the aim is a
wall time on two of at most 0.55 of the time on one. Every lane also records which device its
subprocess saw, so a lane that ran on a GPU it did not lease shows up in the table.

    python -m benchmarks.prefect_gpu_scaling                      # GPUs 0 and 1
    python -m benchmarks.prefect_gpu_scaling --gpu-ids 2,3 --iters 600
    python -m benchmarks.prefect_gpu_scaling --cpu                # CPU slots, to try it here
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernel_bakeoff.tasks.models.plan import DiscoverPlan, PlanEntry
from kernel_bakeoff.tasks.models.run import SearchOutcome

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "examples" / "rmsnorm_torch"
LANES = 4

WORK = """
import json, os, sys, time, torch
n, iters = int(sys.argv[1]), int(sys.argv[2])
cuda = torch.cuda.is_available()
torch.backends.cuda.matmul.allow_tf32 = False
x = torch.randn(n, n, device="cuda" if cuda else "cpu")
y = x @ x
if cuda:
    torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(iters):
    y = x @ x
if cuda:
    torch.cuda.synchronize()
print(json.dumps({
    "seconds": time.perf_counter() - t,
    "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
    "device_count": torch.cuda.device_count() if cuda else 0,
    "device": torch.cuda.get_device_name(0) if cuda else "cpu",
    "bus_id": torch.cuda.get_device_properties(0).pci_bus_id if cuda else None,
}))
"""


def plan_lanes(request) -> DiscoverPlan:
    return DiscoverPlan(
        baseline_ms={},
        plan=[PlanEntry(language=f"lane{i}", mode="author") for i in range(1, LANES)],
    )


def gpu_work(request) -> SearchOutcome:
    env = {**os.environ, **request.inputs["evaluator"].device_env}
    args = [sys.executable, "-c", WORK, os.environ["BENCH_N"], os.environ["BENCH_ITERS"]]
    started = time.perf_counter()
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    seen["lane_seconds"] = time.perf_counter() - started
    (Path(request.record_dir) / "gpu_work.json").write_text(json.dumps(seen))
    return SearchOutcome(notes=json.dumps(seen))


AGENTS = {
    "planner": "benchmarks.prefect_gpu_scaling:plan_lanes",
    "optimizer": "benchmarks.prefect_gpu_scaling:gpu_work",
    "author": "benchmarks.prefect_gpu_scaling:gpu_work",
}


def run(devices: list[str] | None, cpu_slots: int | None, runs: Path, label: str) -> dict:
    from kernel_bakeoff.flows.bakeoff import bakeoff
    from kernel_bakeoff.flows.prefect_workarounds import subflows_without_heartbeats
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    run_dir = runs / "bench"
    for stale in run_dir.glob("lanes/*/roles/gpu_work.json"):
        stale.unlink()
    started = time.perf_counter()
    with subflows_without_heartbeats():
        report = bakeoff(
            BakeoffRequest(
                kernel_path=str(KERNEL),
                mode="bakeoff",
                budget=1,
                gpu_ids=devices,
                cpu_slots=cpu_slots,
                run_dir=str(run_dir),
                agents=AGENTS,
                fresh=True,
            )
        )
    wall = time.perf_counter() - started
    failed = [f"{x.key}: {x.reason}" for x in report.lanes if x.status != "completed"]
    if failed:
        raise SystemExit("lanes failed: " + "; ".join(failed))
    work = [json.loads(p.read_text()) for p in run_dir.glob("lanes/*/roles/gpu_work.json")]
    leases = sorted((x.lease.device, x.lease.start, x.lease.end) for x in report.lanes)
    for a, b in zip(leases, leases[1:]):
        if a[0] == b[0] and b[1] < a[2]:
            raise SystemExit(f"device {a[0]} was held by two lanes at once")
    return {
        "devices": label,
        "lanes": len(report.lanes),
        "wall_s": round(wall, 2),
        "lane_s": [round(w["lane_seconds"], 2) for w in work],
        "matmul_s": [round(w["seconds"], 2) for w in work],
        "seen": sorted({f"{w['visible']}:{w['bus_id'] or w['device']}" for w in work}),
        "one_device_each": all(w["device_count"] <= 1 for w in work),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu-ids", default="0,1", help="two GPU ids (default 0,1)")
    parser.add_argument("--n", type=int, default=8192, help="matrix size")
    parser.add_argument(
        "--iters",
        type=int,
        default=600,
        help="matmuls per lane (seconds per lane: prefect_gpu_scaling.md)",
    )
    parser.add_argument("--cpu", action="store_true", help="one CPU slot against two")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    os.environ["BAKEOFF_LOCK_DIR"] = tempfile.mkdtemp(prefix="bench-locks-")
    if args.cpu:
        os.environ.update(BENCH_N=str(min(args.n, 1024)), BENCH_ITERS=str(min(args.iters, 40)))
        arms = [(None, 1, "1 CPU slot"), (None, 2, "2 CPU slots")]
    else:
        os.environ.update(BENCH_N=str(args.n), BENCH_ITERS=str(args.iters))
        ids = [x.strip() for x in args.gpu_ids.split(",")][:2]
        arms = [(ids[:1], None, f"GPU {ids[0]}"), (ids, None, f"GPUs {','.join(ids)}")]
    runs = Path(tempfile.mkdtemp(prefix="bench-runs-"))
    from kernel_bakeoff.tasks.check.freezing import freeze_isolated
    from kernel_bakeoff.tasks.models.run import PoolConfig

    freeze_isolated(KERNEL, runs / "bench" / "task", PoolConfig(gpu_ids=arms[0][0]))
    results = [run(devices, slots, runs, label) for devices, slots, label in arms]
    print(json.dumps(results, indent=1))
    one, two = results
    print(
        f"\n{LANES} equal lanes, {os.environ['BENCH_ITERS']} x {os.environ['BENCH_N']}^2 fp32 matmul each"
    )
    print(f"{'devices':<16} {'wall s':>8} {'mean lane s':>12} {'ratio':>6}  devices seen by lanes")
    for r in results:
        mean = sum(r["lane_s"]) / len(r["lane_s"])
        ratio = r["wall_s"] / one["wall_s"]
        print(
            f"{r['devices']:<16} {r['wall_s']:>8.2f} {mean:>12.2f} {ratio:>6.3f}  {', '.join(r['seen'])}"
        )
    verdict = "meets" if two["wall_s"] / one["wall_s"] <= 0.55 else "misses"
    print(
        f"two devices take {two['wall_s'] / one['wall_s']:.3f} of the time on one ({verdict} <= 0.55)"
    )


if __name__ == "__main__":
    main()
