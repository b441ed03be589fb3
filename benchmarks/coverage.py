"""How much of KernelBench Discover covers beyond torch's own modes, without a model.

    python -m benchmarks.coverage KB_DIR [--levels 1 2] [--only NAME ...] [--check]
                                  [--out benchmarks/coverage.md] [--json FILE]

KB_DIR holds `level1/`, `level2/` (KernelBench's `KernelBench/` folder, or the repository's root
above it). Each problem is shrunk (`shrink`: its module-level size constants made small, so a
check under TRITON_INTERPRET=1 takes seconds), frozen by the product's freeze (which loads it in
the sandbox), traced by Discover's own trace (tasks/backends/trace.py, in the sandbox) and
matched (tasks/backends/match.py). For each problem the table says what the trace saw, which op
classes matched (or why none did), which candidates beyond torch's modes Discover proposes (the
Triton templates and the library kernels that cover the match), and with `--check` whether each
candidate this host can run passes the harness (`scripts.check.check`, correctness only) with a
Triton kernel launched in its checked calls. A problem counts as covered when at least one such
candidate passes.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput

# Sizes above this become small: a check of a candidate under Triton's interpreter runs one
# Python call per program, so a problem's 4096-wide dims would take minutes where 32-48 take
# seconds.
SMALL = 32


def small(value: int, limit: int = SMALL) -> int:
    """A size above `limit` becomes limit + value % limit: small, its residue modulo the limit
    kept (so a head count or a group count that divides it still divides it, and a size that
    was not a multiple of a block is still not one)."""
    return value if value <= limit else limit + value % limit


def _constant(node: ast.expr):
    """The value of a constant integer expression (`2048 * 2`, `16 * 1024 ** 2`), else None."""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        if not isinstance(node, ast.BinOp) or not isinstance(
            node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Pow, ast.LShift)
        ):
            return None
        a, b = _constant(node.left), _constant(node.right)
        if (
            not isinstance(a, int)
            or not isinstance(b, int)
            or (isinstance(node.op, (ast.Pow, ast.LShift)) and b > 64)
        ):
            return None
        ops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__,
               ast.FloorDiv: int.__floordiv__, ast.Pow: int.__pow__, ast.LShift: int.__lshift__}  # fmt: skip
        return ops[type(node.op)](a, b)
    except Exception:
        return None
    return value if type(value) is int else None


def shrink(source: str, limit: int = SMALL) -> str:
    """The problem with its module-level integer constants (batch_size = 4096, ...) made small.
    Reads the source only: nothing of it runs here."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            value = _constant(node.value)
            if value is not None and value > limit:
                node.value = ast.Constant(small(value, limit))
    return ast.unparse(tree)


def problems(kb_dir: Path, levels: list[int]) -> list[tuple[int, Path]]:
    root = kb_dir / "KernelBench" if (kb_dir / "KernelBench").is_dir() else kb_dir
    found = []
    for level in levels:
        folder = root / f"level{level}"
        if not folder.is_dir():
            raise BadInput(str(kb_dir), f"no level{level}/ folder here (KernelBench's folder?)")
        found += [(level, p) for p in sorted(folder.glob("*.py"), key=_number)]
    return found


def _number(path: Path) -> tuple[int, str]:
    head = path.stem.partition("_")[0]
    return (int(head) if head.isdigit() else 1 << 30, path.stem)


def _beyond_torch(ctx) -> tuple[list, list[str]]:
    """The candidates Discover's template and library backends propose here, and the libraries
    (available here or not) whose kernels cover a match."""
    from kernel_bakeoff.tasks.backends import BACKENDS, triton_templates
    from kernel_bakeoff.tasks.backends.library import Library

    cands = triton_templates.BACKEND.candidates(ctx)
    _, found, _ = triton_templates.matches(ctx)
    covering = []
    for b in BACKENDS:
        if isinstance(b, Library) and b.covered(found):
            covering.append(b.name)
            if b.unavailable_reason() is None:
                cands += b.candidates(ctx)
    return cands, covering


def survey(
    level: int, path: Path, scratch: Path, check: bool, timeout_s: float, limit: int = SMALL
) -> dict:
    """One problem's row: what was traced, matched, proposed and (with `check`) passed."""
    from kernel_bakeoff.scripts.freeze import freeze
    from kernel_bakeoff.tasks.backends import triton_templates
    from kernel_bakeoff.tasks.backends.base import BuildContext

    row = {"level": level, "problem": path.stem, "calls": [], "matches": [], "notes": [],
           "candidates": [], "libraries": [], "passed": []}  # fmt: skip
    work = scratch / f"l{level}_{path.stem}"
    work.mkdir(parents=True)
    small_path = work / path.name
    small_path.write_text(shrink(path.read_text(), limit))
    try:
        task = freeze(small_path, work / "task", other_sizes=False, probe_oracle=False)
        ctx = BuildContext.load(task, work / "discover")
        entry, found, notes = triton_templates.matches(ctx)
        trace = json.loads((ctx.workdir / "trace.json").read_text()) if entry else {}
        first = next(iter(trace.get("workloads", {}).values()), {})
        row["calls"] = list(dict.fromkeys(c["fn"] for c in first.get("calls", [])))
        row["matches"], row["notes"] = [m.label for m in found], notes
        cands, row["libraries"] = _beyond_torch(ctx)
    except Exception as exc:  # a problem the product refuses is a row saying why
        row["notes"].append(f"{type(exc).__name__}: {exc}"[:200])
        return row
    for c in cands:
        entry = {"name": c.name, "origin": c.origin}
        if check:
            from kernel_bakeoff.scripts.check import check as run_check

            verdict = run_check(task, Path(c.path), quick=True, timeout_s=timeout_s, samples=1)
            entry["status"] = verdict.status.value
            entry["reason"] = (verdict.reason or "")[:160]
            # What the checked calls launched (the harness's record): a route that let torch
            # run every call would pass without the template ever running.
            entry["kernels"] = sorted({k for w in verdict.workloads for k in w.triton_kernels})
            if verdict.passed and not entry["kernels"]:
                entry["status"] = "PASSED_WITHOUT_A_KERNEL"
            elif verdict.passed:
                row["passed"].append(c.name)
        row["candidates"].append(entry)
    return row


def _cell(items: list[str], empty: str = "-") -> str:
    return ", ".join(items).replace("|", "/") if items else empty


def table(rows: list[dict], checked: bool) -> str:
    head = "| level | problem | traced calls | matched | candidates beyond torch | libraries |"
    head += " passes |" if checked else ""
    lines = [head, "|" + " --- |" * (7 if checked else 6)]
    for r in rows:
        matched = _cell(r["matches"], "none: " + "; ".join(r["notes"])[:160])
        cands = _cell([c["name"].rsplit("-", 1)[0] for c in r["candidates"]])
        cells = [str(r["level"]), r["problem"], _cell(r["calls"][:8]), matched, cands,
                 _cell(r["libraries"])]  # fmt: skip
        if checked:
            fails = [f"{c['status']}" for c in r["candidates"] if c.get("status") != "PASSED"]
            cells.append(f"{len(r['passed'])}/{len(r['candidates'])}" + (
                f" ({_cell(fails)})" if fails else ""))  # fmt: skip
        lines.append("| " + " | ".join(c.replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines)


def shares(rows: list[dict], checked: bool) -> list[str]:
    out = []
    for level in sorted({r["level"] for r in rows}) + [None]:
        some = [r for r in rows if level is None or r["level"] == level]
        name = f"level {level}" if level else "all"
        matched = sum(1 for r in some if r["matches"])
        proposed = sum(1 for r in some if r["candidates"])
        line = f"{name}: {matched} of {len(some)} matched, {proposed} with a candidate"
        if checked:
            passed = sum(1 for r in some if r["passed"])
            line += f", {passed} with one that passes ({100 * passed / max(len(some), 1):.0f}%)"
        out.append(line)
    return out


def _machine() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()  # fmt: skip
    except Exception:
        commit = "unknown"
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, commit {commit}"


def _render(files: list[Path], out: Path | None, argv) -> int:
    """Shares and table of saved rows, in level and problem order."""
    try:
        rows = [r for f in files for r in json.loads(f.read_text())]
    except (OSError, ValueError) as exc:
        print(f"coverage: cannot read rows: {exc}", file=sys.stderr)
        return 2
    rows.sort(key=lambda r: (r["level"], _number(Path(r["problem"]))))
    checked = any("status" in c for r in rows for c in r["candidates"])
    summary = shares(rows, checked)
    print("\n".join(summary))
    if out:
        command = "python -m benchmarks.coverage " + " ".join(argv or sys.argv[1:])
        out.write_text(f"`{command}`\n\n" + "\n".join(f"- {s}" for s in summary)
                       + "\n\n" + table(rows, checked) + "\n")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb_dir", type=Path, nargs="?")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", nargs="*", help="problem file stems (or their number prefix)")
    parser.add_argument("--check", action="store_true", help="check each candidate (slow)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a check")
    parser.add_argument("--small", type=int, default=SMALL,
                        help="sizes above this are shrunk to it plus their residue (default "
                        f"{SMALL}; 16 makes a conv problem's interpreted checks ~8x cheaper)")  # fmt: skip
    parser.add_argument("--out", type=Path, help="write the table and shares here (markdown)")
    parser.add_argument("--json", type=Path, help="write every row here")
    parser.add_argument("--rows", type=Path, nargs="+",
                        help="no survey: the shares and table of these --json files (one "
                        "survey split over several processes)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.rows:
        return _render(args.rows, args.out, argv)
    if args.kb_dir is None:
        print("coverage: give KB_DIR (KernelBench's folder) or --rows FILE...", file=sys.stderr)
        return 2
    try:
        todo = problems(args.kb_dir, args.levels)
    except BadInput as exc:
        print(f"coverage: {exc}", file=sys.stderr)
        return 2
    if args.only:
        todo = [(lv, p) for lv, p in todo if p.stem in args.only
                or p.stem.partition("_")[0] in args.only]  # fmt: skip
    if not todo:
        print(f"coverage: no problem in {args.kb_dir} to survey", file=sys.stderr)
        return 2
    # Templates are candidates on a CPU only under the interpreter, and only when asked for.
    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("BAKEOFF_INTERPRETED_TEMPLATES", "1")
    # The freeze times the baseline; nothing here reads a timing: the fewest samples it takes.
    os.environ.setdefault("BAKEOFF_SAMPLES", "5")
    rows, t0 = [], time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="coverage-"))
    scratch.chmod(0o755)  # the box's unprivileged uid reads the frozen tasks under it
    try:
        for level, path in todo:
            rows.append(survey(level, path, scratch, args.check, args.timeout, args.small))
            r = rows[-1]
            print(f"level{level} {path.stem}: {_cell(r['matches'], 'no match')}; "
                  f"{len(r['candidates'])} candidates, {len(r['passed'])} passed", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = shares(rows, args.check)
    print("\n".join(summary))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.out:
        command = "python -m benchmarks.coverage " + " ".join(argv or sys.argv[1:])
        args.out.write_text(
            f"# KernelBench coverage\n\n`{command}`, on {_machine()}, "
            f"{time.monotonic() - t0:.0f} s.\n\n" + "\n".join(f"- {s}" for s in summary)
            + "\n\n" + table(rows, args.check) + "\n"
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
