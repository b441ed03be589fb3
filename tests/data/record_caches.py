"""Record the (config -> time) caches the strategy tests replay, on this box with Triton's
interpreter: `TRITON_INTERPRET=1 python tests/data/record_caches.py`. Times are host-clock
milliseconds (median of 3 calls); a config whose output is wrong is recorded as null."""

import json
import os
import platform
import statistics
import sys
import time
from itertools import product
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parents[1] / "examples" / "softmax_triton"))


def timed(fn, *args) -> float:
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def record(name, params, run, check):
    entries = []
    for values in product(*params.values()):
        config = dict(zip(params, values))
        out = run(config)
        entries.append({"config": config, "time_ms": timed(run, config) if check(out) else None})
    meta = {
        "recorded_on": f"{platform.processor() or platform.machine()} ({os.cpu_count()} cores)",
        "clock": "host, TRITON_INTERPRET=1",
        "torch": torch.__version__,
    }
    (HERE / f"cache_{name}.json").write_text(
        json.dumps({**meta, "entries": entries}, indent=1) + "\n"
    )


def main():
    assert os.environ.get("TRITON_INTERPRET") == "1"
    from kernel import softmax

    from tests.data.triton_dot import matmul

    torch.manual_seed(0)
    x = torch.randn(64, 1000)
    want = torch.softmax(x, -1)
    record(
        "softmax_block",
        {"BLOCK": [None, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]},
        lambda c: softmax(x, BLOCK=c["BLOCK"]),
        lambda out: torch.allclose(out, want, atol=1e-5),
    )
    a, b = torch.randn(128, 96), torch.randn(96, 128)
    ref = a @ b
    tiles = [16, 32, 64, 128]
    record(
        "matmul_tiles",
        {"BLOCK_M": tiles, "BLOCK_N": tiles, "BLOCK_K": tiles},
        lambda c: matmul(a, b, **c),
        lambda out: torch.allclose(out, ref, atol=1e-3),
    )


if __name__ == "__main__":
    main()
