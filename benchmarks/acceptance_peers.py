"""The field's reference figures for candidates the harness checked: triton's do_bench (median),
or a plain loop for ncu to read.

    python3 -m benchmarks.acceptance_peers TASK_DIR [NAME=CANDIDATE[@CACHE_DIR] ...]
    python3 -m benchmarks.acceptance_peers TASK_DIR --loop N [--dirty] [NAME=CANDIDATE]

Each candidate (`baseline` for the frozen baseline) is loaded through its format's
`load_callable`, the path the harness's candidate process takes, on the first workload's
inputs, and called under `torch.no_grad()` as there. With `@CACHE_DIR`, the compilers read the
caches the harness filled for that candidate (compile-cache/<identity>/ in the run directory),
so the same compiled code is timed without compiling again. Prints one JSON line per candidate:
{"peer", "do_bench_ms", "load_s", "sm_clock_mhz"} (the SM clock read right after do_bench, as
the harness reads it right after each sample; None without NVML). With `--loop N`, calls the candidate N times with a
synchronise after each (for `ncu --clock-control none` to time its kernels) and prints nothing;
`--dirty` writes a 256 MB buffer before each call, as do_bench and the harness flush, so the
kernel starts on an L2 full of dirty lines (run that under `ncu --cache-control none`: ncu's
own flush would invalidate them).
Needs a GPU; used by benchmarks/gpu_acceptance.py.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch

from scripts.formats import module_for
from scripts.spec import OpSpec

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
    """Point Inductor and Triton at a candidate's caches (both read these at compile time)."""
    if cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(Path(cache) / "inductor")
        os.environ["TRITON_CACHE_DIR"] = str(Path(cache) / "triton")


def parse(item: str) -> tuple[str, str | None, str | None]:
    name, _, rest = item.partition("=")
    path, _, cache = rest.partition("@")
    return name, (None if path in ("", "baseline") else path), (cache or None)


def main(argv: list[str]) -> int:
    from triton.testing import do_bench

    from scripts.smclock import SmClock

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
        ms = do_bench(lambda fn=fn, args=args: fn(*args), warmup=25, rep=100, return_mode="median")
        line = {"peer": name, "do_bench_ms": ms, "load_s": load_s, "sm_clock_mhz": sm_clock()}
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
