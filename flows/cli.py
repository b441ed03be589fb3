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

    task = freeze(
        Path(args.kernel_path),
        Path(args.out) if args.out else None,
        op=args.op,
        solution=args.solution,
    )
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
            authors = ", ".join(op["authors"]) or "none"
            print(
                f"{op['op_type']}/{op['name']}  ({op['workloads']} workloads; solutions: {authors})"
            )
    return 0


COMMANDS = {"freeze": cmd_freeze, "list": cmd_list}


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
    p.add_argument("--op", help="trace set: the operator to freeze, NAME or OP_TYPE/NAME")
    p.add_argument(
        "--solution",
        help="trace set: the expert baseline, an author, a solution name or a solution .json "
        "(default: author 'baseline', else the first author, with a warning)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    p = sub.add_parser(
        "list", help="list the operators of a flashinfer-bench trace set that have workloads"
    )
    p.add_argument("trace_set", help="trace-set root (holds definitions/ and workloads/)")
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


if __name__ == "__main__":
    sys.exit(main())
