"""GPU acceptance: the product's main path on a real GPU, against the field's reference timings.

    python3 benchmarks/gpu_acceptance.py [--out DIR] [--commit SHA] [--deadline-s S] [--merge]
                                         [--reserve-s S] [--skip-corpus] [--budget N]
                                         [PROBLEM ...]
    python3 benchmarks/gpu_acceptance.py --rejudge      # the committed record, no GPU

From the repository root on a GPU box with torch and triton (Prefect and pydantic as wheels:
benchmarks/gpu_acceptance.md). For each KernelBench-format problem in benchmarks/acceptance/
(default: all) it runs `bakeoff run PROBLEM --mode bakeoff --json` through the CLI, then, in the
same process tree, triton's do_bench (median) on the very candidates the bake-off checked
(eager, torch.compile default / max-autotune / coordinate descent), loaded as the harness loads
them and reading the compiled code from the harness's caches. A PROBLEM is a name there or a
path from the repository root (the shipped examples: `examples/softmax_triton`). Then:
identical code checked twice, ncu's kernel durations (--clock-control none) for a single-kernel
candidate, and the GPU corpus (streams, illegal access, out of memory). It prints one table,
writes benchmarks/results/gpu_acceptance.json (commit, device, aims, rows) and exits 1 when an
aim is missed. Work not reached before the deadline counts as missed, and so does every problem
of the default list that no call reached: a whole acceptance takes several device calls, each
`--merge`d into the record of the one before at the same commit.

The steps are benchmarks/acceptance_run.py's, the aims benchmarks/acceptance_aims.py's, the
tables benchmarks/acceptance_table.py's; this file parses the command line and sequences them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python3 benchmarks/gpu_acceptance.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.acceptance_aims import judge  # noqa: E402
from benchmarks.acceptance_run import (  # noqa: E402
    ORDER,
    RESULT,
    Deadline,
    call_record,
    device_info,
    harness_settings,
    merged,
    run_call,
)
from benchmarks.acceptance_table import print_record  # noqa: E402


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="*", default=list(ORDER))
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/gpu_acceptance"))
    ap.add_argument("--commit", default=os.environ.get("BAKEOFF_COMMIT", ""))
    ap.add_argument("--deadline-s", type=float, default=520.0)
    ap.add_argument("--budget", type=int, default=2, help="candidates per search lane")
    ap.add_argument(
        "--merge",
        action="store_true",
        help="add to the record of an earlier call at the same commit (problems, checks)",
    )
    ap.add_argument(
        "--reserve-s", type=float, default=120.0, help="kept for the checks after the bake-offs"
    )
    ap.add_argument(
        "--skip-corpus",
        action="store_true",
        help="leave the GPU corpus out (a --merge call after one that ran it at this commit)",
    )
    ap.add_argument(
        "--rejudge",
        action="store_true",
        help="judge the committed record's rows again (after a change to the judging; no GPU)",
    )
    return ap.parse_args(argv)


# the package's own dependencies a bare GPU box lacks (pyproject.toml; gitpython and anthropic
# are left out: the bake-off's path does not import them). A missing one otherwise stops every
# bake-off after its freeze, minutes of device time per problem, under `KeyError: 'report'`.
NEEDED = ("prefect", "pydantic", "tomli_w", "optuna", "jinja2", "rich", "sqlalchemy", "safetensors")


def import_torch():
    """torch, once the package's dependencies are importable too (None, said on stderr, if not)."""
    try:
        import importlib

        for name in NEEDED:
            importlib.import_module(name)
        import torch
    except ImportError as exc:
        print(
            f"gpu_acceptance: {exc}: install the wheels first (gpu_acceptance.md)", file=sys.stderr
        )
        return None
    return torch


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.rejudge:
        return rejudge()
    torch = import_torch()
    if torch is None:
        return 2
    deadline = Deadline(args.deadline_s)
    settings = harness_settings()  # before this call sets any of its own
    out = Path(args.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    device = device_info(torch)
    print(f"device {device}; commit {args.commit or 'unknown'}", flush=True)
    ran = run_call(args.problems, out, args.budget, args.reserve_s, args.skip_corpus, deadline)
    record = call_record(args.commit, settings, device, ran, deadline)
    if args.merge and RESULT.is_file():
        record = merged(record, json.loads(RESULT.read_text()))
    return write(record, out / "gpu_acceptance.json")


def write(record: dict, copy: Path | None = None) -> int:
    """Judge the record, write it (and a copy), print its table; 0 when every aim is met."""
    record["aims"] = judge(record)
    text = json.dumps(record, indent=1, default=str)
    if copy is not None:
        copy.write_text(text)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(text + "\n")
    print_record(record)
    return 0 if all(a["met"] for a in record["aims"].values()) else 1


def rejudge() -> int:
    """The record's aims judged again from its own rows, which stay as the device wrote them."""
    return write(json.loads(RESULT.read_text()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
