"""Why compile coordinate descent reads over do_bench in the harness: which configuration each
process tuned, and what each figure times.

    python3 -m benchmarks.cd_probe [--out DIR] [--tunes N] PROBLEM ...

For each problem (a name in benchmarks/acceptance/ or a path), on a GPU: freeze it, build
Discover's `torch-compile-coordinate-descent` candidate, then

1. check it with the harness into a compiler cache of its own (`scripts.check.check`), and
   list the tuned configurations Inductor wrote there (`*.best_config`);
2. time the same candidate from that cache with `benchmarks.acceptance_peers` (do_bench, do_bench
   under the profiler, and which cache files it used or added);
3. tune it again `--tunes` times in fresh caches, in quiet processes, and as many times with
   the profiler's first start on a thread beside the load and first call (as the harness's
   candidate process starts it), each timed by do_bench right after.

The configurations the harness tuned and those the other processes tuned, beside each figure,
tell a different configuration from a different measurement. Prints one JSON line per step and
a table; writes DIR/cd_probe.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "torch-compile-coordinate-descent"


def best_configs(cache: Path) -> dict[str, dict]:
    """Inductor's tuned configurations under a cache, by kernel file stem."""
    found = {}
    for f in sorted(Path(cache).rglob("*.best_config")):
        try:
            data = json.loads(f.read_text())
        except ValueError:
            continue
        keep = ("XBLOCK", "YBLOCK", "R0_BLOCK", "RBLOCK", "R0_", "num_warps", "num_stages")
        found[f.stem[:12]] = {k: v for k, v in data.items() if k.startswith(keep)}
    return found


def tune(task: str, candidate: str, cache: str, profiler_thread: bool) -> dict:
    """In this (fresh) process: load the candidate into `cache`, make its first call (compile and
    tune), then do_bench it; with `profiler_thread`, the profiler's first start runs on a thread
    beside the load and first call."""
    from benchmarks import acceptance_peers as peers

    peers.use_caches(cache)
    import torch

    warming = None
    if profiler_thread:
        from torch.profiler import ProfilerActivity, profile

        def start_stop():
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
                pass

        warming = threading.Thread(target=start_stop, daemon=True)
        warming.start()
    torch.set_grad_enabled(False)
    t0 = time.perf_counter()
    fn, args = peers.load(Path(task), candidate)
    fn(*args)
    torch.cuda.synchronize()
    first_s = time.perf_counter() - t0
    if warming is not None:
        warming.join()
    from triton.testing import do_bench

    ms = do_bench(lambda: fn(*args), warmup=25, rep=100, return_mode="median")
    return {"do_bench_ms": ms, "first_call_s": first_s, "configs": best_configs(Path(cache))}


def sh_json(argv: list[str], timeout: float) -> tuple[list[dict], str]:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    out = p.stdout + p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    return lines, out[-1500:] if p.returncode else ""


def probe(problem: str, out: Path, tunes: int) -> dict:
    from scripts.check import check
    from scripts.freeze import freeze, measure_baseline
    from tasks.backends.base import BuildContext
    from tasks.backends.torch_compile import BACKEND

    source = ROOT / "benchmarks" / "acceptance" / f"{problem}.py"
    source = source if source.exists() else ROOT / problem
    where = out / Path(problem).stem
    t0 = time.monotonic()
    task = freeze(source, where / "task", measure=measure_baseline)
    ctx = BuildContext.load(task, where / "work")
    cand = next(c for c in BACKEND.candidates(ctx) if c.name == NAME)
    result: dict = {"problem": problem, "freeze_s": round(time.monotonic() - t0, 1)}

    cache = where / "cache-harness"
    t0 = time.monotonic()
    v = check(task, Path(cand.path), cache_dir=cache)
    timed = [w for w in v.workloads if w.timing is not None]
    result["harness"] = {
        "status": v.status.value,
        "median_ms": timed[0].timing.median_ms if timed else None,
        "check_s": round(time.monotonic() - t0, 1),
        "configs": best_configs(cache),
    }
    print(json.dumps({"step": "harness", **result["harness"]}), flush=True)

    argv = [sys.executable, "-m", "benchmarks.acceptance_peers", str(task)]
    lines, err = sh_json(argv + [f"cd={cand.path}@{cache}"], 300)
    result["peer_from_harness_cache"] = (lines or [{"error": err}])[0]
    result["peer_from_harness_cache"]["configs_after"] = best_configs(cache)
    print(json.dumps({"step": "peer", **result["peer_from_harness_cache"]}), flush=True)

    result["tunes"] = []
    for k in range(tunes):
        for thread in (False, True):
            fresh = where / f"cache-tune{k}{'-profiler' if thread else ''}"
            argv = [sys.executable, "-m", "benchmarks.cd_probe", "--tune", str(task), cand.path]
            lines, err = sh_json(
                argv + [str(fresh)] + (["--profiler-thread"] if thread else []), 300
            )
            row = {"profiler_thread": thread, **((lines or [{"error": err}])[0])}
            result["tunes"].append(row)
            print(json.dumps({"step": "tune", **row}), flush=True)
    return result


def table(results: list[dict]) -> None:
    print("\n| problem | process | ms | configs |\n| --- | --- | --- | --- |")
    for r in results:
        h, p = r["harness"], r["peer_from_harness_cache"]
        print(f"| {r['problem']} | harness check | {h['median_ms']} | {h['configs']} |")
        cache = p.get("cache") or {}
        print(
            f"| {r['problem']} | do_bench on its cache (profiled {p.get('do_bench_profiled_ms')}; "
            f"fx hits {cache.get('fxgraph_hits')}, misses {cache.get('fxgraph_misses')}, "
            f"configs added {len(cache.get('best_configs_added') or [])}) | "
            f"{p.get('do_bench_ms')} | |"
        )
        for t in r["tunes"]:
            how = "fresh tune, profiler thread" if t["profiler_thread"] else "fresh tune, quiet"
            print(f"| {r['problem']} | {how} | {t.get('do_bench_ms')} | {t.get('configs')} |")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--tune"]:
        task, candidate, cache = argv[1:4]
        print(json.dumps(tune(task, candidate, cache, "--profiler-thread" in argv)), flush=True)
        return 0
    ap = argparse.ArgumentParser(prog="cd_probe")
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--out", default="/tmp/cd_probe")
    ap.add_argument("--tunes", type=int, default=2)
    args = ap.parse_args(argv)
    out = Path(args.out)
    results = []
    for problem in args.problems:
        try:
            results.append(probe(problem, out, args.tunes))
        except Exception as exc:  # one problem's failure must not lose the others' figures
            print(f"{problem}: {type(exc).__name__}: {exc}", flush=True)
        (out / "cd_probe.json").write_text(json.dumps(results, indent=1))
    table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
