"""Lanes over several devices of one host, through the CLI as a user runs it ([K]).

1. Scaling: one `bakeoff run PROBLEM --mode bakeoff --fresh` on the first device alone, then on
   every device with `--gpu-mode pool` and with `pin`: wall time, each lane's device and lease
   seconds, and the ratio of each N-device run to the one-device run. Aim: at most 1/N + 0.05.
2. Two bake-offs of PROBLEM started at once on every device: both finish, and the device pool's
   journal (`leases.jsonl`, every lease given back: Discover's, each lane's) never shows two
   holders of one device at once.

3. With `--deployment`: the same bake-off dispatched to lane deployments (`dispatch=deployment`:
   a PostgreSQL-backed server on 127.0.0.1 and two workers of the `lanes` queue, each seeing
   half the devices; `benchmarks/multi_gpu_service.py`), its winner beside the single-process
   runs' winners.

A lane without a model runs only where it has something to search (an optimize lane): the
lanes that run are Discover's plan plus `--backends`, so pick a PROBLEM with at least as many
optimize lanes as devices (examples/softmax_triton has two: triton and torch).

    python3 -m benchmarks.multi_gpu examples/softmax_triton --json $OUT/multi_gpu.json
    python3 -m benchmarks.multi_gpu examples/softmax_triton --cpu-slots 2   # dry run, no GPU
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from kernel_bakeoff.tasks.check.gpu_pool import DevicePool, detect, overlapping

ROOT = Path(__file__).resolve().parent.parent


def bakeoff(problem: str, run_dir: Path, ids: list[str], mode: str, args) -> list:
    """The argv of one bake-off through the CLI (started by the caller)."""
    argv = [
        sys.executable,
        "-m",
        "kernel_bakeoff.flows.cli",
        "run",
        problem,
        "--mode",
        "bakeoff",
        "--fresh",
    ]
    argv += ["--run-dir", str(run_dir), "--gpu-ids", ",".join(ids), "--gpu-mode", mode]
    argv += ["--budget", str(args.budget)]
    if args.backends:
        argv += ["--backends", args.backends]
    if args.cpu_slots:
        argv += ["--cpu-slots", str(args.cpu_slots)]
    return argv


def seconds(lease: dict | None) -> float | None:
    if not lease or not lease.get("end"):
        return None
    start, end = (datetime.fromisoformat(lease[k].replace("Z", "+00:00")) for k in ("start", "end"))
    return round((end - start).total_seconds(), 1)


def outcome(run_dir: Path, rc: int, wall: float) -> dict:
    """What one bake-off did: its exit, wall time, winner, and each lane's device and lease."""
    try:
        report = json.loads((run_dir / "report.json").read_text())
    except (OSError, ValueError):
        return {"exit": rc, "wall_s": round(wall, 1), "lanes": [], "winner": None}
    lanes = [
        {
            "lane": lane["key"],
            "status": lane["status"],
            "device": (lane.get("lease") or {}).get("device"),
            "lease_s": seconds(lane.get("lease")),
        }
        for lane in report["lanes"]
    ]
    winner = report.get("winner") or {}
    return {"exit": rc, "wall_s": round(wall, 1), "lanes": lanes, "winner": winner.get("name")}


def run_at_once(argvs: list[list], run_dirs: list[Path], env, timeout: float) -> list[dict]:
    """Start every bake-off at once; each one's wall time is its own (to its exit)."""
    started = time.monotonic()
    logs = [d.with_name(d.name + ".log") for d in run_dirs]
    procs = []
    for argv, log in zip(argvs, logs):
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as out:
            procs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=out))
    ended: dict[int, float] = {}
    while len(ended) < len(procs):
        for i, proc in enumerate(procs):
            if i not in ended and proc.poll() is not None:
                ended[i] = time.monotonic() - started
        if time.monotonic() - started > timeout:
            for i, proc in enumerate(procs):
                if i not in ended:
                    proc.kill()
                    proc.wait()
                    ended[i] = time.monotonic() - started
        time.sleep(0.2)
    out = []
    for i, (proc, run_dir, log) in enumerate(zip(procs, run_dirs, logs)):
        result = outcome(run_dir, proc.returncode, ended[i])
        if proc.returncode != 0:
            result["log_tail"] = log.read_text(errors="replace")[-600:]
        out.append(result)
    return out


def run_arguments(doc: str) -> argparse.ArgumentParser:
    """The arguments every multi-device benchmark takes: what to bake off, and where."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("problem", help="op directory or KernelBench problem, as for `bakeoff run`")
    ap.add_argument("--backends", help="languages to add as lanes (`bakeoff run --backends`)")
    ap.add_argument("--budget", type=int, default=2, help="candidates each lane may check")
    ap.add_argument("--cpu-slots", type=int, help="a host without GPUs: this many CPU slots")
    ap.add_argument("--timeout-s", type=float, default=900.0, help="per bake-off (or pair)")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = run_arguments(__doc__)
    ap.add_argument("--deployment", action="store_true", help="also dispatch=deployment (stage 3)")
    args = ap.parse_args(argv)

    ids = list(detect(args.cpu_slots).ids)
    if len(ids) < 2:
        print(f"multi_gpu: one device here ({ids}); nothing to spread lanes over", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="multi-gpu-"))
    env = {**os.environ, "BAKEOFF_LOCK_DIR": str(work / "locks"), "PYTHONPATH": str(ROOT)}
    record: dict = {"problem": args.problem, "devices": ids, "scaling": {}, "concurrent": {}}

    for label, use, mode in [
        ("1 device", ids[:1], "pool"),
        *[(m, ids, m) for m in ("pool", "pin")],
    ]:
        run_dir = work / label.replace(" ", "-")
        (result,) = run_at_once([bakeoff(args.problem, run_dir, use, mode, args)], [run_dir], env, args.timeout_s)  # fmt: skip
        record["scaling"][label] = result
        print(f"{label:>8}: exit {result['exit']}, {result['wall_s']} s, lanes {result['lanes']}", flush=True)  # fmt: skip
    one = record["scaling"]["1 device"]["wall_s"]
    aim = 1 / len(ids) + 0.05
    for mode in ("pool", "pin"):
        ratio = record["scaling"][mode]["wall_s"] / one if one else None
        record["scaling"][mode]["ratio"] = ratio
        record["scaling"][mode]["aim_met"] = ratio is not None and ratio <= aim

    locks = work / "locks-together"  # a journal of these two bake-offs' leases alone
    together = {**env, "BAKEOFF_LOCK_DIR": str(locks)}
    dirs = [work / f"together-{i}" for i in range(2)]
    argvs = [bakeoff(args.problem, d, ids, "pool", args) for d in dirs]
    both = run_at_once(argvs, dirs, together, args.timeout_s)
    journal = DevicePool(detect(args.cpu_slots), lock_dir=locks).leases()
    clashes = overlapping(journal)
    record["concurrent"] = {"runs": both, "leases": journal, "overlapping": clashes}

    print(f"\n{args.problem} on {len(ids)} devices ({', '.join(ids)}); aim <= {aim:.3f}")
    print(f"{'run':<10} {'wall s':>7} {'ratio':>6}  lanes (device, lease s)")
    for label, r in record["scaling"].items():
        lanes = ", ".join(f"{x['lane']}:{x['device']}/{x['lease_s']}" for x in r["lanes"] if x["device"])  # fmt: skip
        ratio = f"{r['ratio']:.3f}" if r.get("ratio") else "-"
        print(f"{label:<10} {r['wall_s']:>7} {ratio:>6}  {lanes}")
    print(f"two at once: exits {[r['exit'] for r in both]}, walls {[r['wall_s'] for r in both]} s, "
          f"{len(journal)} leases, {len(clashes)} overlapping")  # fmt: skip
    runs = [*record["scaling"].values(), *both]
    if args.deployment:
        from benchmarks import multi_gpu_service

        kind = detect(args.cpu_slots).kind
        served = work / "deployment"
        served.mkdir(mode=0o755)
        result = multi_gpu_service.run(args.problem, kind, ids, args.budget, args.backends, served, args.timeout_s)  # fmt: skip
        record["deployment"] = result
        runs.append(result)
        clashes = clashes + result["overlapping"]
        lanes = ", ".join(f"{x['lane']}:{x.get('worker')}/{x['device']}" for x in result["lanes"] if x["device"])  # fmt: skip
        winners = sorted({r["winner"] or "none" for r in record["scaling"].values()})
        print(f"dispatch=deployment: exit {result['exit']}, {result['wall_s']} s, winner "
              f"{result['winner']} (single-process runs: {', '.join(winners)}); lanes {lanes}; "
              f"{len(result['leases'])} leases, {len(result['overlapping'])} overlapping")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(record, indent=1, default=str))
    failed = [r for r in runs if r["exit"] != 0]
    return 1 if failed or clashes else 0


if __name__ == "__main__":
    sys.exit(main())
