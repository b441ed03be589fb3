"""kernel-bakeoff: freeze a GPU kernel into an immutable oracle, race implementations of its op
in several languages against it, check and time every candidate in an isolated harness, and
report the fastest verified one (or keep the original when nothing beats it beyond noise)."""

# Commands import lazily, so `freeze` and `check` never load Prefect.

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import traceback
from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput, shown
from kernel_bakeoff.tasks.run.key import take_key


def _prepare_device_env() -> None:
    # Without a GPU, Triton kernels run under its interpreter on the CPU.
    try:
        import torch

        if not torch.cuda.is_available():
            os.environ.setdefault("TRITON_INTERPRET", "1")
    except ImportError:
        pass


def cmd_freeze(args) -> int:
    # lazily, as every command here: a command loads only what it runs (no Prefect for freeze, check)
    from kernel_bakeoff.scripts import sizes
    from kernel_bakeoff.scripts.freeze import freeze, load_task
    from kernel_bakeoff.scripts.manifest import verify

    # a directory without a spec: the model's
    from kernel_bakeoff.tasks.engine.model_room import model_room
    from kernel_bakeoff.tasks.run.input_identity import needs_spec

    root = Path(args.out).resolve().parent if args.out else Path("runs")
    kernel_path, said = Path(args.kernel_path), ""
    if needs_spec(kernel_path):  # oracle_freezer writes it, or says in one line what is missing
        kernel_path, said = model_room("spec_for")(kernel_path, root)
    if said:
        print(said, file=sys.stderr)
    if not args.json and sys.stderr.isatty():  # the baseline's check can take a minute
        print(f"freezing {args.kernel_path}: checking and timing the baseline", file=sys.stderr)

    task = freeze(
        kernel_path,
        Path(args.out) if args.out else None,
        op=args.op,
        solution=args.solution,
    )
    manifest = {"oracle_sha256": verify(task)}  # re-derived from the files, not read
    spec, _, baseline = load_task(task)
    degenerate = spec.degenerate.message if spec.degenerate else None
    if degenerate:
        print(f"bakeoff freeze: warning: {degenerate}", file=sys.stderr)
    from kernel_bakeoff.tasks.check.standing import noisy_baseline  # lazily, as every command here

    noisy = noisy_baseline(task)
    if noisy:  # every speedup will divide by this figure: said at once, on stderr
        print(f"bakeoff freeze: warning: {noisy}", file=sys.stderr)
    if args.json:
        print(
            json.dumps(
                {
                    "task_dir": str(task),
                    "oracle_sha256": manifest["oracle_sha256"],
                    "degenerate": degenerate,
                    **baseline.model_dump(mode="json"),
                }
            )
        )
        return 0
    print(f"frozen: {task}  (oracle {manifest['oracle_sha256'][:12]}, device {baseline.device})")
    for name, wl in baseline.workloads.items():
        print(f"  {name:<24} {wl.status.value:<8} baseline {wl.median_ms:.4f} ms")
    print(f"  other sizes: {sizes.describe(spec)}")
    return 0


def cmd_check(args) -> int:
    from functools import partial

    # lazily, as every command here: a command loads only what it runs (no Prefect for freeze, check)
    from kernel_bakeoff.scripts.candidate_fit import refuse_unfit
    from kernel_bakeoff.scripts.check import check
    from kernel_bakeoff.scripts.freeze import load_task, measure_baseline
    from kernel_bakeoff.tasks.check.standing import noisy_baseline

    task, candidate = Path(args.task_dir), Path(args.candidate)
    if not task.exists():
        raise BadInput(str(task), "no such task directory or kernel")
    if not candidate.exists():
        raise BadInput(str(candidate), "candidate does not exist")
    refuse_unfit(task, candidate)  # another problem's candidate: one line, before any freeze
    options = {"timeout_s": args.timeout, "samples": args.samples}
    if not (task / "MANIFEST.json").is_file():  # a kernel rather than a task: frozen first
        task = _frozen_for_check(task, args.out, partial(measure_baseline, **options))
    else:  # a task given as it is: verified before its baseline is read, said, not re-frozen
        load_task(task)
        if noisy := noisy_baseline(task):
            print(f"bakeoff check: warning: {noisy}", file=sys.stderr)
    verdict = check(task, candidate, **options)
    spec = load_task(task)[0]
    degenerate = spec.degenerate.message if spec.degenerate else None
    if args.json:
        data = json.loads(verdict.model_dump_json())
        print(json.dumps({**data, "degenerate": degenerate}) if degenerate else json.dumps(data))
    else:
        print(_verdict_table(verdict))
        if degenerate:
            print(f"warning: {degenerate}")
    return 0 if verdict.passed else 1


def _frozen_for_check(kernel: Path, out: str | None, measure) -> Path:
    """The task `bakeoff freeze KERNEL` makes (runs/tasks/<op>, or `--out`), reused when it was
    frozen from the same input: one oracle id, one denominator, whichever command froze it.
    Where it is, and whether it was frozen now, is said in one line on stderr."""
    # lazily, as every command here: a command loads only what it runs (no Prefect for freeze, check)
    from kernel_bakeoff.scripts import manifest
    from kernel_bakeoff.scripts.freeze import default_out, freeze

    # in the box; freeze's own call reuses its answer
    from kernel_bakeoff.scripts.untrusted import load_spec
    from kernel_bakeoff.tasks.check.quiet_baseline import retime_while_noisy

    out = Path(out) if out else default_out(load_spec(kernel)[0])
    earlier = (out / "MANIFEST.json").is_file()
    task = freeze(kernel, out, measure=measure)
    oracle = manifest.verify(task)[:12]
    how = "frozen earlier from it" if earlier else "frozen now"
    print(f"bakeoff check: {kernel}: task {task} ({how}, oracle {oracle})", file=sys.stderr)
    # every speedup of this check divides by it: a noisy one re-timed or said, never reused
    # silently (the oracle id stays: only the timing files change)
    retime_while_noisy(
        task,
        lambda: freeze(kernel, out, measure=measure),
        lambda line: print(f"bakeoff check: {line}", file=sys.stderr),
    )
    return task


def _verdict_table(v) -> str:
    def num(x, fmt=".4g"):
        return "-" if x is None else format(x, fmt)

    lines = [
        f"candidate  {v.candidate}",
        f"oracle     {v.oracle_sha256[:12] or '-'}  device {v.device}",
        "",
        f"{'workload':<24} {'status':<20} {'error':>9} {'tol':>8} {'median ms':>10} "
        f"{'spread ms':>10} {'frozen ms':>10} {'beside ms':>10} {'speedup':>8}",
    ]
    for w in v.workloads:
        t, b = w.timing, w.baseline_timing
        speedup = "-" if w.speedup is None else f"{w.speedup:.3f}x"
        lines.append(
            f"{w.workload:<24} {w.status.value:<20} {num(w.max_rel_error, '.2e'):>9} "
            f"{num(w.tolerance, '.0e'):>8} {num(t and t.median_ms):>10} "
            f"{num(t and t.spread_ms):>10} {num(w.baseline_ms):>10} "
            f"{num(b and b.median_ms):>10} {speedup:>8}"
        )
    lines += [f"  {w.workload}: {w.reason}" for w in v.workloads if w.reason]
    lines += [f"  {w.workload}: {w.drift}" for w in v.workloads if w.drift]
    lines.append("  speedup = frozen ms / median ms; beside ms: the baseline timed in this check")
    if v.passed:
        mean = "-" if v.speedup is None else f"{v.speedup:.3f}x"
        timed = len(v.workloads) - len(v.sizes_checked)
        lines += ["", f"PASSED  speedup {mean} (geometric mean over {timed} timed workloads)"]
        if v.sizes_checked:
            lines.append(f"        also right at sizes not listed: {', '.join(v.sizes_checked)}")
    else:
        lines += ["", f"{v.status.value}  {v.reason}"]
        if v.output_tail.strip():
            lines += ["", "candidate output (last lines):"]
            lines += ["  " + ln for ln in v.output_tail.strip().splitlines()[-20:]]
    return "\n".join(lines)


def cmd_list(args) -> int:
    from kernel_bakeoff.scripts.formats import flashinfer  # lazily, as every command here

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


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if not (math.isfinite(value) and value > 0):  # nan and inf too: a deadline of nan is none
            finite = " and finite" if kind is float else ""
            raise argparse.ArgumentTypeError(f"must be positive{finite}, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def _csv(value: str | None) -> list[str] | None:
    return None if value is None else [part.strip() for part in value.split(",") if part.strip()]


def cmd_run(args) -> int:
    # Prefect loads only after the request has been checked
    from kernel_bakeoff.flows.live import run
    from kernel_bakeoff.tasks.models.request import parse_request

    request = parse_request(  # bad input: BadInput, one line naming the field
        {
            "kernel_path": args.kernel_path,
            "mode": args.mode,
            "target_language": args.target_language,
            "backends": _csv(args.backends),
            "budget": args.budget,
            "gpu_ids": _csv(args.gpu_ids),
            "gpu_mode": args.gpu_mode,
            "cpu_slots": args.cpu_slots,
            "fresh": args.fresh,
            "run_dir": args.run_dir,
            "runs_root": args.runs_root,
            "lane_timeout_s": args.lane_timeout,
            "check_timeout_s": args.check_timeout,
            "samples": args.samples,
            "apply_to_original": args.apply,
            "rounds": args.rounds,
        }
    )
    return run(request, as_json=args.json, debug=args.debug)


def cmd_history(args) -> int:
    from kernel_bakeoff.tasks.history.command import show  # lazily, as every command here

    return show(args.kernel, args.runs_root, args.db, args.json)


def cmd_apply(args) -> int:
    from kernel_bakeoff.tasks.apply.command import (
        apply_run,  # lazily, as every command here (it loads git)
    )

    return apply_run(Path(args.run_dir), args.repo, args.branch, args.json)


COMMANDS = {
    "freeze": cmd_freeze,
    "check": cmd_check,
    "list": cmd_list,
    "run": cmd_run,
    "history": cmd_history,
    "apply": cmd_apply,
}


class OneLineParser(argparse.ArgumentParser):
    """A usage error is bad input like any other: one line naming it, exit status 2 (argparse
    prints its usage block first; `--help` still shows it)."""

    def error(self, message: str):

        self.exit(2, f"{self.prog}: error: {shown(message)}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="bakeoff",
        description=__doc__,
        epilog="Every command takes --help. Bad input: one line, exit status 2.",
    )
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
        "check",
        help="check and time a candidate against a frozen task (exit 0 passed, 1 not passed)",
    )
    p.add_argument(
        "task_dir", help="frozen task directory, or a kernel (e.g. a KernelBench .py) to freeze"
    )
    p.add_argument("candidate", help="candidate source file or directory in the op's format")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.add_argument(
        "--timeout", type=_positive(float), default=300.0, help="deadline for the candidate (s)"
    )
    p.add_argument("--samples", type=_positive(int), help="timed samples per workload (default 30)")
    p.add_argument(
        "--out",
        help="a kernel's task directory, reused when frozen from it (default runs/tasks/<op name>)",
    )

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
    p.add_argument(
        "--apply", action="store_true", help="put the winner on a new branch of the input's repo"
    )
    p.add_argument(
        "--rounds", type=_positive(int), default=1, help="campaign: rounds seeded from the best"
    )
    # Re-timing a noisy frozen baseline is automatic now (BAKEOFF_RETIME_TRIES, #40): the flag
    # is still accepted so that a command written for it keeps working, and does nothing more.
    p.add_argument("--retime-baseline", action="store_true", help=argparse.SUPPRESS)

    p = sub.add_parser("history", help="past results of a kernel from the history store")
    p.add_argument("kernel", help="op name (e.g. rmsnorm) or the kernel's path")
    p.add_argument("--runs-root", default="runs", help="runs root holding history.sqlite")
    p.add_argument("--db", help="database URL (default $BAKEOFF_HISTORY_URL, else the runs root)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    p = sub.add_parser("apply", help="put a run's winner on a new branch of the original repo")
    p.add_argument("run_dir", help="a finished run directory (holds report.json)")
    p.add_argument("--repo", help="the git repository (default: the one holding the input)")
    p.add_argument("--branch", help="the new branch's name (default bakeoff/<op>-<oracle>)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


STOPPED = "stopped; run the same command to resume"


def _stopped(command: str) -> int:
    """Ctrl-C: one line, and out at once. Threads still writing (a lane, Prefect's server) die
    with the process; what they finished is on disk, and the same command reuses it."""
    import signal

    from kernel_bakeoff.scripts.sandbox import descendants  # lazily, as every command here

    print(f"\nbakeoff {command}: {STOPPED}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    for pid in descendants(os.getpid()):  # Prefect's server, the fork server: ours, and holding
        try:  # our stdout; they would outlive us (an exit this abrupt skips their shutdown)
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    os._exit(130)


def main(argv: list[str] | None = None) -> int:
    take_key()  # first: nothing this command starts (Prefect's server, workers) inherits the key
    args = build_parser().parse_args(argv)
    _prepare_device_env()
    try:
        # here, not at the top: `import flows.cli` stays without pydantic (docs/layering.md),
        # which every command loads anyway
        from kernel_bakeoff.tasks.run.settings import enter

        enter()  # the BAKEOFF_* settings, read once: a bad value is one line, before any work
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        if args.debug:
            traceback.print_exc()
        return _stopped(args.command)
    except BadInput as exc:
        if args.debug:
            traceback.print_exc()
        print(f"bakeoff {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the file system refused a path the user gave: bad input too
        if args.debug or exc.filename is None:
            raise

        print(
            f"bakeoff {args.command}: error: {BadInput(exc.filename, exc.strerror or str(exc))}",
            file=sys.stderr,
        )
        return 2
    except Exception as exc:
        if args.debug or args.command != "run":
            raise

        print(f"bakeoff run: failed: {type(exc).__name__}: {shown(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
