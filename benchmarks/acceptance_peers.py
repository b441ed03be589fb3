"""The field's reference figures for candidates the harness checked: triton's do_bench (median),
or a plain loop for ncu to read.

    python3 -m benchmarks.acceptance_peers TASK_DIR [NAME=CANDIDATE[@CACHE_DIR] ...]
    python3 -m benchmarks.acceptance_peers TASK_DIR --loop N [--dirty] [NAME=CANDIDATE]

Each candidate (`baseline` for the frozen baseline) is loaded through its format's
`load_callable`, the path the harness's candidate process takes, on the first workload's
inputs, and called under `torch.no_grad()` as there. With `@CACHE_DIR`, the compilers read the
caches the harness filled for that candidate (compile-cache/<identity>/ in the run directory),
so the same compiled code is timed without compiling again. Prints one JSON line per candidate:
{"peer", "do_bench_ms", "load_s", "sm_clock_mhz", "host_queue_ms", "head_start_flushes",
"do_bench_head_start_ms"} (the SM clock read right after do_bench, as the harness reads it right
after each sample; None without NVML).

do_bench records its start event right after its one 256 MB flush: when the host takes longer
to queue the call than the device takes to flush, the device waits for the call inside the
timed region and do_bench reads part of the host's pace (the compiled candidates of a 20 us
softmax). So each candidate is timed a second time by the same do_bench with its flush
repeated until it outlasts the host's queueing of one call (`head_start_flushes`, from
`host_queue_ms` measured here): the device then finds the call queued when it reaches the
start event, as the harness's gate arranges. Where the two figures agree, do_bench was not
host-bound.

Two diagnostics for compiled candidates whose harness figure and do_bench's disagree while
other kinds agree (coordinate descent has: docs/studies/README.md): `cache` says whether this process
ran the harness's compiled code (Inductor's FX-graph cache hits and misses, and the files it
added to the candidate's cache: a `.best_config` added is a kernel tuned again here), and
`do_bench_profiled_ms` is plain do_bench with torch.profiler recording CUDA activity, as
the harness's candidate process records its timed samples.

With `--loop N`, calls the candidate N times with a
synchronise after each (for `ncu --clock-control none` to time its kernels) and prints nothing;
`--dirty` writes a 256 MB buffer before each call, as do_bench and the harness flush, so the
kernel starts on an L2 full of dirty lines (run that under `ncu --cache-control none`: ncu's
own flush would invalidate them).
Needs a GPU; used by benchmarks/gpu_acceptance.py.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from kernel_bakeoff.scripts.formats import module_for
from kernel_bakeoff.scripts.spec import OpSpec

SEED = 1234


def load(task: Path, candidate: str | None):
    spec = OpSpec.model_validate_json((task / "spec.json").read_text())
    fmt = module_for(spec.format)
    src = task / "baseline_src"
    if candidate is None:
        fn = fmt.load_callable(spec, src, spec.entry, "cuda")
    else:
        fn = fmt.load_callable(spec, src, spec.entry, "cuda", candidate=Path(candidate))
    args = list(fmt.make_inputs(spec, src, spec.workloads[0], SEED, "cuda"))
    return fn, args


def use_caches(cache: str | None) -> None:
    """Point Inductor, Triton and torch's C++/CUDA extension builds (under XDG_CACHE_HOME) at a
    candidate's caches, as the harness's candidate process has them (`scripts.judge.child_env`);
    each reads its variable when it compiles."""
    if cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(Path(cache) / "inductor")
        os.environ["TRITON_CACHE_DIR"] = str(Path(cache) / "triton")
        os.environ["XDG_CACHE_HOME"] = str(cache)


def parse(item: str) -> tuple[str, str | None, str | None]:
    name, _, rest = item.partition("=")
    path, _, cache = rest.partition("@")
    return name, (None if path in ("", "baseline") else path), (cache or None)


def host_queue_ms(fn, args, calls: int = 20) -> float:
    """The host's time to queue one call (median of `calls`; each call is queued behind a device
    spin of about 10 ms, so the device never holds the host back)."""
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        torch.cuda._sleep(20_000_000)  # ~10 ms of device spin: the queue is never full
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    return statistics.median(times)


def flush_ms(flush, cache, repeats: int = 5) -> float:
    """One of do_bench's flushes, on the device (median of `repeats`)."""
    times = []
    for _ in range(repeats):
        first, second = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        first.record()
        flush(cache)
        second.record()
        torch.cuda.synchronize()
        times.append(first.elapsed_time(second))
    return statistics.median(times)


def do_bench_head_start(fn, flushes: int) -> float:
    """triton's do_bench (median) with its flush before each call done `flushes` times."""
    from triton import runtime
    from triton.testing import do_bench

    driver = runtime.driver.active
    one = type(driver).clear_cache

    def clear(cache, driver=driver):
        for _ in range(flushes):
            one(driver, cache)

    driver.clear_cache = clear
    try:
        return do_bench(fn, warmup=25, rep=100, return_mode="median")
    finally:
        del driver.clear_cache


def cache_files(cache: str | None) -> set[str]:
    """The files under a candidate's compiler cache, relative to it."""
    if not cache or not Path(cache).is_dir():
        return set()
    return {str(f.relative_to(cache)) for f in Path(cache).rglob("*") if f.is_file()}


def cache_use(before: set[str], after: set[str]) -> dict:
    """What this process did with the harness's cache: FX-graph hits and misses (Inductor's
    counters), files it added, and which of those are tuned configurations."""
    from torch._dynamo.utils import counters

    added = sorted(after - before)
    return {
        "fxgraph_hits": counters["inductor"]["fxgraph_cache_hit"],
        "fxgraph_misses": counters["inductor"]["fxgraph_cache_miss"],
        "files_added": len(added),
        "best_configs_added": [f for f in added if f.endswith(".best_config")],
    }


def do_bench_profiled(fn) -> float:
    """Plain do_bench (median) while torch.profiler records CUDA activity."""
    from torch.profiler import ProfilerActivity, profile
    from triton.testing import do_bench

    with profile(activities=[ProfilerActivity.CUDA]):
        return do_bench(fn, warmup=25, rep=100, return_mode="median")


def main(argv: list[str]) -> int:
    from triton import runtime
    from triton.testing import do_bench

    from kernel_bakeoff.scripts.smclock import SmClock

    task = Path(argv[0])
    sm_clock = SmClock()
    rest = argv[1:]
    loops, dirty = 0, None
    if rest[:1] == ["--loop"]:
        loops, rest = int(rest[1]), rest[2:]
    if rest[:1] == ["--dirty"]:
        dirty, rest = torch.empty(256 << 20, dtype=torch.uint8, device="cuda"), rest[1:]
    torch.set_grad_enabled(False)
    for item in rest or ["baseline=baseline"]:
        name, path, cache = parse(item)
        use_caches(cache)
        before = cache_files(cache)
        if "torch._dynamo" in sys.modules:
            from torch._dynamo.utils import counters

            counters.clear()
        t0 = time.perf_counter()
        fn, args = load(task, path)
        fn(*args)
        torch.cuda.synchronize()
        load_s = time.perf_counter() - t0
        if loops:
            for _ in range(loops):
                if dirty is not None:
                    dirty.zero_()
                fn(*args)
                torch.cuda.synchronize()
            continue
        call = lambda fn=fn, args=args: fn(*args)  # noqa: E731
        ms = do_bench(call, warmup=25, rep=100, return_mode="median")
        line = {"peer": name, "do_bench_ms": ms, "load_s": load_s, "sm_clock_mhz": sm_clock()}
        driver = runtime.driver.active
        queue = host_queue_ms(fn, args)
        one = flush_ms(driver.clear_cache, driver.get_empty_cache_for_benchmark())
        flushes = int(min(64, max(1, math.ceil(1.5 * queue / max(one, 1e-3)) + 1)))
        line |= {"host_queue_ms": queue, "flush_ms": one, "head_start_flushes": flushes}
        line["do_bench_head_start_ms"] = do_bench_head_start(call, flushes) if flushes > 1 else ms
        line["do_bench_profiled_ms"] = do_bench_profiled(call)
        if "torch._dynamo" in sys.modules:
            line["cache"] = cache_use(before, cache_files(cache))
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
