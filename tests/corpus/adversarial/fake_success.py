"""class: exiting early with a clean status / writing the harness's result files. Writes result
files that look complete (fast samples, no outputs) and exits with status 0 before any call.

expect: FLAGGED|CRASHED
"""

import json
import os
import sys
from pathlib import Path

request = json.loads(Path(sys.argv[1]).read_text())
results = Path(request["results"])
(results / "hello.json").write_text(json.dumps({"device": "cpu", "clock": "host"}))
for i, wl in enumerate(request["workloads"]):
    n = len(wl["sample_seeds"])
    record = {
        "workload": wl["name"],
        "trials": [
            [{"file": f"wl{i}_trial{t}_out0.bin", "shape": [1], "dtype": "float32"}]
            for t in range(len(wl["trial_seeds"]))
        ],
        "samples_ms": [0.001] * n,
        "host_ms": [0.001] * n,
        "projections": [[[0.0] * 4] for _ in range(n)],
        "wall_calls": 3,
    }
    (results / f"wl{i}.json").write_text(json.dumps(record))
os._exit(0)


def rmsnorm(x, weight, eps=1e-6):
    return x
