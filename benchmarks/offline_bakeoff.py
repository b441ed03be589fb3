"""Offline bake-off with no model: Discover + search lanes on the shipped examples and the
problems in benchmarks/problems/, every candidate checked by the harness (scripts.check).

Prints one table per problem: eager torch, torch.compile default and max-autotune, the bake-off
winner, and the memory-traffic floor (bytes the op must move / device copy bandwidth measured
here with a large device-to-device copy). Needs torch + triton + pydantic (+ optuna for large
spaces); never imports Prefect. See benchmarks/offline_bakeoff.md for the command and figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from kernel_bakeoff.scripts.formats import module_for  # noqa: E402
from kernel_bakeoff.scripts.freeze import freeze, load_task  # noqa: E402
from kernel_bakeoff.tasks import backends  # noqa: E402
from kernel_bakeoff.tasks.check import judgement  # noqa: E402
from kernel_bakeoff.tasks.discover.plan import discover  # noqa: E402
from kernel_bakeoff.tasks.engine.search_lane import run_search  # noqa: E402
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult  # noqa: E402
from kernel_bakeoff.tasks.search.score import geomean_ms, workload_ms  # noqa: E402

PEERS = {
    "eager": ("torch-eager", "baseline"),
    "compile": ("torch-compile-default",),
    "max-autotune": ("torch-compile-max-autotune",),
}


def default_problems() -> list[Path]:
    found = [ROOT / "examples" / "rmsnorm_torch", ROOT / "examples" / "softmax_triton"]
    found += sorted((ROOT / "examples" / "kernelbench").glob("*.py"))
    found += sorted((ROOT / "benchmarks" / "problems").glob("*.py"))
    return [p for p in found if p.exists()]


def copy_bandwidth(nbytes: int = 1 << 30, reps: int = 20) -> float:
    """Bytes read + written per second by a large device-to-device copy (the memory floor)."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / times[len(times) // 2]


def _tensor_bytes(values) -> int:
    total = 0
    for v in values if isinstance(values, (list, tuple)) else [values]:
        if isinstance(v, torch.Tensor):
            total += v.numel() * v.element_size()
    return total


def traffic_bytes(task_dir: Path) -> dict[str, int]:
    """Per workload: bytes of every input and parameter read plus every output written."""
    spec, src, _ = load_task(task_dir)
    fmt = module_for(spec.format)
    fn = fmt.load_callable(spec, src, spec.entry, "cuda")
    params = 0
    module = getattr(fn, "module", None)
    if isinstance(module, torch.nn.Module):
        params = sum(p.numel() * p.element_size() for p in module.parameters())
    out = {}
    for wl in spec.workloads:
        inputs = fmt.make_inputs(spec, src, wl, 0, "cuda")
        with torch.no_grad():
            result = fn(*inputs)
        out[wl.name] = _tensor_bytes(inputs) + _tensor_bytes(result) + params
        del inputs, result
    torch.cuda.empty_cache()
    return out


def make_check_fn(task_dir: Path, workdir: Path, timeout_s: float):
    from kernel_bakeoff.scripts.check import check

    def check_fn(ref: CandidateRef) -> CandidateResult:
        t0 = time.monotonic()
        verdict = check(
            task_dir,
            Path(ref.path),
            candidate_env=ref.env or None,
            timeout_s=timeout_s,
            workdir=workdir / "check" / ref.name,
        )
        s = geomean_ms(verdict)
        shown = f"{s:.4f} ms" if s is not None else verdict.status.value
        print(f"    {ref.name:<44} {shown:>14}  ({time.monotonic() - t0:.0f} s)", flush=True)
        return CandidateResult(candidate=ref, verdict=verdict)

    return check_fn


def bake(problem: Path, out: Path, args) -> dict:
    name = problem.stem if problem.is_file() else problem.name
    print(f"\n== {name}", flush=True)
    task = freeze(problem, out / "tasks" / name)
    work = out / "work" / name
    check_fn = make_check_fn(task, work, args.timeout_s)
    plan = discover(task, work / "discover", check_fn)
    results = list(plan.measured)
    for entry in plan.plan:
        backend = backends.lane_backend(entry.language or "")
        if entry.mode != "optimize" or backend is None or entry.language in args.skip_lanes:
            continue
        results += run_search(
            task,
            entry.language,
            "optimize",
            work / f"search-{entry.language}",
            check_fn,
            budget_evals=args.budget_evals,
            budget_s=args.budget_s,
            history_dir=out / "history",
        )
    return summarise(name, task, results, args.bandwidth)


def summarise(name: str, task: Path, results: list[CandidateResult], bandwidth: float) -> dict:
    passed = [r for r in results if geomean_ms(r.verdict) is not None]
    by_name = {r.candidate.name: r for r in passed}
    winner = judgement.by_speed(passed)[0]  # the report's measure: speedup on the frozen baseline
    traffic = traffic_bytes(task)
    rows = []
    for wl, nbytes in traffic.items():
        row = {"workload": wl, "bytes": nbytes, "floor_ms": nbytes / bandwidth * 1e3}
        for column, names in PEERS.items():
            hit = next((by_name[n] for n in names if n in by_name), None)
            row[column] = workload_ms(hit.verdict).get(wl) if hit else None
        row["winner"] = workload_ms(winner.verdict).get(wl)
        rows.append(row)
    summary = {
        "problem": name,
        "winner": winner.candidate.name,
        "winner_origin": winner.candidate.origin,
        "candidates": len(results),
        "failed": len(results) - len(passed),
        "rows": rows,
    }
    print_table(summary)
    return summary


def _ms(v) -> str:
    return f"{v:9.4f}" if v is not None else f"{'-':>9}"


def print_table(s: dict) -> None:
    print(
        f"\n{s['problem']}: winner {s['winner']} ({s['candidates']} candidates, {s['failed']} failed)"
    )
    head = f"{'workload':<14}{'eager':>10}{'compile':>10}{'max-at':>10}{'winner':>10}{'floor':>10}  win/floor"
    print(head)
    for r in s["rows"]:
        ratio = r["winner"] / r["floor_ms"] if r["winner"] else math.nan
        print(
            f"{r['workload']:<14}{_ms(r['eager'])} {_ms(r['compile'])} {_ms(r['max-autotune'])}"
            f" {_ms(r['winner'])} {_ms(r['floor_ms'])}  {ratio:8.2f}x"
        )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("problems", nargs="*", type=Path, help="op dirs or KernelBench .py files")
    p.add_argument("--out", type=Path, default=Path("runs/offline_bakeoff"))
    p.add_argument("--budget-evals", type=int, default=8, help="per search lane")
    p.add_argument("--budget-s", type=float, default=60.0, help="per search lane")
    p.add_argument("--timeout-s", type=float, default=300.0, help="per candidate check")
    p.add_argument("--skip-lanes", nargs="*", default=["torch"], help="languages not searched")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("offline_bakeoff needs a GPU (the floor is a device copy bandwidth)", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    args.bandwidth = copy_bandwidth()
    print(f"device {torch.cuda.get_device_name()}  copy bandwidth {args.bandwidth / 1e12:.2f} TB/s")
    print(f"lanes here: {', '.join(backends.languages())}")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    summaries = []
    for problem in args.problems or default_problems():
        summaries.append(bake(Path(problem), out, args))
        report = {  # rewritten after every problem: a run stopped at a time limit keeps its figures
            "device": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "copy_bandwidth_Bps": args.bandwidth,
            "seconds": time.monotonic() - t0,
            "problems": summaries,
        }
        (out / "bakeoff.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"\ntotal {report['seconds']:.0f} s; figures in {out / 'bakeoff.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
