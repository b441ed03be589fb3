"""`bakeoff` command line. Commands import lazily so `freeze` and `check` never load Prefect."""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from scripts.errors import BadInput


def _prepare_device_env() -> None:
    # Without a GPU, Triton kernels run under its interpreter on the CPU.
    try:
        import torch

        if not torch.cuda.is_available():
            os.environ.setdefault("TRITON_INTERPRET", "1")
    except ImportError:
        pass


def cmd_freeze(args) -> int:
    from scripts.freeze import freeze

    task = freeze(Path(args.kernel_path), Path(args.out) if args.out else None)
    baseline = json.loads((task / "baseline.json").read_text())
    manifest = json.loads((task / "MANIFEST.json").read_text())
    if args.json:
        print(
            json.dumps(
                {"task_dir": str(task), "oracle_sha256": manifest["oracle_sha256"], **baseline}
            )
        )
        return 0
    print(f"frozen: {task}  (oracle {manifest['oracle_sha256'][:12]}, device {baseline['device']})")
    for name, wl in baseline["workloads"].items():
        print(f"  {name:<24} {wl['status']:<8} baseline {wl['median_ms']:.4f} ms")
    return 0


def cmd_list(args) -> int:
    from scripts.formats import flashinfer

    ops = flashinfer.list_operators(Path(args.trace_set))
    if args.json:
        print(json.dumps(ops))
    else:
        for op in ops:
            print(f"{op['op_type']}/{op['name']}  ({op['workloads']} workloads)")
    return 0


def _csv(value: str | None) -> list[str] | None:
    return None if value is None else [part.strip() for part in value.split(",") if part.strip()]


def cmd_run(args) -> int:
    from flows.live import run  # Prefect loads only after the request has been checked
    from tasks.request import BakeoffRequest

    request = BakeoffRequest(
        kernel_path=args.kernel_path,
        mode=args.mode,
        target_language=args.target_language,
        backends=_csv(args.backends),
        budget=args.budget,
        gpu_ids=_csv(args.gpu_ids),
        gpu_mode=args.gpu_mode,
        cpu_slots=args.cpu_slots,
        fresh=args.fresh,
        run_dir=args.run_dir,
        runs_root=args.runs_root,
        lane_timeout_s=args.lane_timeout,
        check_timeout_s=args.check_timeout,
        samples=args.samples,
    )
    return run(request, as_json=args.json, debug=args.debug)


COMMANDS = {"freeze": cmd_freeze, "list": cmd_list, "run": cmd_run}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bakeoff", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "freeze", help="freeze a kernel into an immutable task directory (the oracle)"
    )
    p.add_argument(
        "kernel_path", help="op directory (op.toml), KernelBench problem .py, or trace-set op"
    )
    p.add_argument("--out", help="task directory to create (default runs/tasks/<op name>)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    p = sub.add_parser(
        "list", help="list the operators of a flashinfer-bench trace set that have workloads"
    )
    p.add_argument("trace_set", help="trace-set root (holds definitions/ and workloads/)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    p = sub.add_parser(
        "run", help="run a bake-off in this process (Prefect's embedded server), live progress"
    )
    p.add_argument("kernel_path", help="op directory, KernelBench problem .py, or trace-set op")
    p.add_argument(
        "--mode", default="optimize", help="optimize (default) | author | bakeoff (all lanes)"
    )
    p.add_argument("--target-language", help="author mode: the language to write the op in")
    p.add_argument("--backends", help="bakeoff mode: comma-separated languages to add as lanes")
    p.add_argument("--budget", type=int, default=4, help="candidates each lane may check")
    p.add_argument("--gpu-ids", help="comma-separated device ids (default: every device here)")
    p.add_argument("--gpu-mode", default="pool", help="pool (any free device) | pin (lane i->i)")
    p.add_argument("--cpu-slots", type=int, help="lanes at once on a host without GPUs")
    p.add_argument("--fresh", action="store_true", help="re-run every lane, reuse nothing")
    p.add_argument("--run-dir", help="run directory (default runs/<op>-<input hash>)")
    p.add_argument("--runs-root", default="runs", help="where default run directories go")
    p.add_argument("--lane-timeout", type=float, default=3600.0, help="seconds per lane")
    p.add_argument("--check-timeout", type=float, default=300.0, help="seconds per check")
    p.add_argument("--samples", type=int, help="timed samples per workload")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _prepare_device_env()
    try:
        return COMMANDS[args.command](args)
    except BadInput as exc:
        if args.debug:
            traceback.print_exc()
        print(f"bakeoff {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if args.debug or args.command != "run":
            raise
        print(f"bakeoff run: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
