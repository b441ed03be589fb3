"""Pre-flight for an H100 call: do the template candidates Discover proposes for the acceptance
problems compile for sm_90 at the problems' real sizes, in every corner of their search spaces?

    python -m benchmarks.sm90_preflight [PROBLEM ...] [--out benchmarks/sm90_preflight.md]
    python -m benchmarks.sm90_preflight PROBLEM --grid BLOCK_M=16,32,64 --grid num_warps=4,8

PROBLEM: a file stem of benchmarks/acceptance/ (default: the nine below), or a KernelBench-format
file. Each problem is traced
on the meta device (tasks/backends/trace.py, in this process: these are the repository's own
problems) and matched (tasks/backends/match.py); the libraries whose kernels cover a match are
listed. For each templated match, configs of its space (kernel_templates.space on nvidia) are
rendered: the default, each axis at its extremes with the rest at the default, and for each
value of a categorical axis (precision, passes, loop) the largest valid tile (most shared
memory); with `--grid`, instead every valid config of the grid's product over the default (a
parameter's values as its space spells them: ints, True/False, names). Each config's impl.py is run through op_route's Route on the problem's meta inputs
with JITFunction.run intercepted: every launch it would make is cross-compiled for sm_90
(tasks/backends/triton_xc.cross_compile) with the launch's own argument types, constexprs,
num_warps and num_stages. Arguments equal to 1 are specialised as Triton does at launch; no
16-byte divisibility hints are given, so loads may be less vectorised than on the device.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernel_bakeoff.tasks.backends.kernel_templates import SHARED_LIMIT  # an H100's 227 KB a block

ROOT = Path(__file__).resolve().parents[1]
ACCEPTANCE = ROOT / "benchmarks" / "acceptance"
PROBLEMS = ["gemm_fp32_square", "bmm_fp32", "gemm_scale_leaky_relu", "softmax_long_row",
            "attention_fp32_hd128", "layernorm", "conv_relu_bias", "sum_reduction",
            "cross_entropy"]  # fmt: skip
CATEGORICAL = ("precision", "passes", "loop", "persistent")


def proposals(path: Path):
    """(the traced entry's spec, sources, entry, templated matches, libraries, notes)."""
    from kernel_bakeoff.scripts.formats import load_spec
    from kernel_bakeoff.tasks.backends import BACKENDS
    from kernel_bakeoff.tasks.backends.library import Library
    from kernel_bakeoff.tasks.backends.match import find
    from kernel_bakeoff.tasks.backends.source import torch_entry
    from kernel_bakeoff.tasks.backends.trace import trace
    from kernel_bakeoff.tasks.backends.triton_templates import templated

    spec, src = load_spec(path)
    entry = torch_entry(spec, src)
    found, notes = find(trace(spec, src, entry))
    libs = [b.name for b in BACKENDS if isinstance(b, Library) and b.covered(found)]
    return spec, src, entry, templated(found), libs, notes


def configs(match) -> list[tuple[str, dict]]:
    """(label, config): the default, one-axis extremes, and per categorical value the valid
    config of most shared memory (kernel_templates.shared_bytes), then largest tile, then
    fewest warps: the worst case for shared memory and registers."""
    from kernel_bakeoff.tasks.backends.kernel_templates import shared_bytes, space

    sp, default = space(match, "nvidia")
    out = [("default", default)]

    def add(label, c):
        if sp.invalid(c) is None and all(c != seen for _, seen in out):
            changed = ", ".join(f"{k}={v}" for k, v in c.items() if v != default[k])
            out.append((label if label.endswith(changed) else f"{label}: {changed}", c))

    def _size(c):
        tile = math.prod(v for k, v in c.items() if k.startswith("BLOCK") or k == "SPLIT")
        return (shared_bytes(match, c), tile, c.get("num_stages", 1), -c.get("num_warps", 1))

    for p in sp.params:
        for v in dict.fromkeys((p.values[0], p.values[-1])):
            add(f"{p.name}={v}", {**default, p.name: v})
    valid = [c for c in sp if sp.invalid(c) is None]
    for p in sp.params:
        if p.name in CATEGORICAL and len(p.values) > 1:
            for v in p.values:
                some = [c for c in valid if c[p.name] == v]
                if some:
                    add(f"largest {p.name}={v}", max(some, key=_size))
    if valid:
        add("largest", max(valid, key=_size))
    return out


def grid_configs(match, grid: dict[str, list[str]]) -> list[tuple[str, dict]]:
    """(label, config) for every valid point of `grid` (parameter -> values as typed) over the
    match's default; a parameter the space does not have is refused."""
    import itertools

    from kernel_bakeoff.tasks.backends.kernel_templates import space

    sp, default = space(match, "nvidia")
    known = {p.name: p.values for p in sp.params}
    axes = []
    for name, typed in grid.items():
        if name not in known:
            raise SystemExit(f"sm90_preflight: --grid {name}: not a parameter of {match.label}")
        by_text = {str(v): v for v in known[name]}
        missing = [t for t in typed if t not in by_text]
        if missing:
            raise SystemExit(
                f"sm90_preflight: --grid {name}={missing[0]}: not one of {known[name]}"
            )
        axes.append([(name, by_text[t]) for t in typed])
    out = []
    for point in itertools.product(*axes):
        c = {**default, **dict(point)}
        if sp.invalid(c) is None:
            out.append((", ".join(f"{k}={v}" for k, v in point), c))
    return out


def launches(spec, src: Path, entry: str, match, config: dict, scratch: Path) -> list:
    """The (kernel, args, kwargs) the config's impl.py launches on the problem's meta inputs."""
    import torch
    from triton.runtime.jit import JITFunction

    from kernel_bakeoff.scripts.formats import module_for
    from kernel_bakeoff.tasks.backends import op_route
    from kernel_bakeoff.tasks.backends.kernel_templates import render_impl
    from kernel_bakeoff.tasks.backends.trace import _meta_inputs

    (scratch / "impl.py").write_text(render_impl(match, config))
    route = {"op": match.op, "epilogue": match.params.get("epilogue", [])}
    (scratch / "route.json").write_text(json.dumps(route))
    op_route._HERE, op_route.Route.impls = scratch, {}
    seen, real_run = [], JITFunction.run

    def capture(self, *args, grid, warmup, **kwargs):
        seen.append((self, args, kwargs))

    fn = module_for(spec.format).load_callable(spec, src, entry, "meta")
    inputs = _meta_inputs(spec, src, spec.timed_workloads[0])
    JITFunction.run = capture
    try:
        router = op_route.Route()
        op_route.Route.impls["impl.py"]._runs_here = lambda *tensors: True  # meta tensors
        with torch.no_grad(), router:
            fn(*inputs)
    finally:
        JITFunction.run = real_run
    return seen


def compile_launch(kernel, args, kwargs):
    """cross_compile one captured launch for sm_90, typed as Triton types it at launch."""
    from triton.runtime.jit import mangle_type

    from kernel_bakeoff.tasks.backends.triton_xc import cross_compile

    bound = dict(zip(kernel.arg_names, args))
    options = {k: v for k, v in kwargs.items() if k not in kernel.arg_names}
    bound.update({k: v for k, v in kwargs.items() if k in kernel.arg_names})
    signature, constexprs = {}, {}
    for p in kernel.params:
        v = bound.get(p.name, p.default)
        one = type(v) is int and v == 1 and not p.do_not_specialize
        if p.is_constexpr or v is None or one:
            signature[p.name], constexprs[p.name] = "constexpr", v
        else:
            signature[p.name] = mangle_type(v)
    return cross_compile(kernel, signature, constexprs, "sm_90", **options)


def _shown(label: str, config: dict) -> str:
    return label if label != "default" else ", ".join(f"{k}={v}" for k, v in config.items())


def survey(name: str, scratch: Path, grid: dict[str, list[str]] | None = None) -> list[dict]:
    from kernel_bakeoff.tasks.backends.kernel_templates import shared_bytes

    path = Path(name) if name.endswith(".py") else ACCEPTANCE / f"{name}.py"
    spec, src, entry, found, libs, notes = proposals(path)
    rows = []
    if not found:
        rows.append({"problem": name, "libs": libs, "note": "; ".join(notes) or "no template"})
        print(_line(rows[-1]), flush=True)
    for m in found:
        for label, config in grid_configs(m, grid) if grid else configs(m):
            base = {"problem": name, "libs": libs, "template": m.label, "config": config,
                    "label": _shown(label, config), "estimate": shared_bytes(m, config)}  # fmt: skip
            start = len(rows)
            try:
                seen = launches(spec, src, entry, m, config, scratch)
            except Exception as exc:
                rows.append({**base, "note": f"route failed: {type(exc).__name__}: {exc}"[:200]})
            else:
                if not seen:
                    rows.append({**base, "note": "no kernel launched (the template declined)"})
                for kernel, args, kwargs in seen:
                    r = compile_launch(kernel, args, kwargs)
                    rows.append({**base, "kernel": kernel.__name__, **r.__dict__})
            print("\n".join(_line(r) for r in rows[start:]), flush=True)
    return rows


def _line(r: dict) -> str:
    if "ok" not in r:
        cells = [r["problem"], r.get("template", "-"), r.get("label", "-"), "-", r["note"]]
        return "| " + " | ".join(cells) + " | | | | |"
    status = "ok" if r["ok"] else "FAIL " + r["error"].splitlines()[0][:120]
    shared = r["shared"] or 0
    if r["ok"] and shared > SHARED_LIMIT:
        status = "OVER 227 KB"
    mma = ", ".join(f"{k.split('.')[0]}x{n}" for k, n in sorted(r["matrix_instructions"].items()))
    est = f" (est. {r['estimate'] // 1024})" if r["estimate"] else ""
    cells = [r["problem"], r["template"], r["label"], r["kernel"], status, str(r["n_regs"]),
             str(r["n_spills"]), f"{shared / 1024:.1f}{est}", mma or "-"]  # fmt: skip
    return "| " + " | ".join(c.replace("|", "/") for c in cells) + " |"


HEAD = ("| problem | template | config | kernel | sm_90 | regs | spill B (st+ld) | shared KB (estimate) | mma |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", default=PROBLEMS)
    parser.add_argument("--out", type=Path, help="write the table here (markdown)")
    parser.add_argument("--grid", action="append", default=[], metavar="PARAM=V1,V2",
                        help="compile this grid of the space instead of its corners")  # fmt: skip
    args = parser.parse_args(argv)
    grid = {}
    for g in args.grid:
        name, _, values = g.partition("=")
        if not values:
            parser.error(f"--grid {g}: expected PARAM=V1,V2")
        grid[name] = values.split(",")
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("sm90_preflight: cross-compiling needs TRITON_INTERPRET unset", file=sys.stderr)
        return 2
    import triton

    t0, rows = time.monotonic(), []
    print(HEAD, flush=True)
    with tempfile.TemporaryDirectory(prefix="sm90-preflight-") as scratch:
        for name in args.problems:
            rows += survey(name, Path(scratch), grid)
    libs = {r["problem"]: r["libs"] for r in rows}
    fails = [r for r in rows if "ok" not in r or not r["ok"] or (r["shared"] or 0) > SHARED_LIMIT]
    summary = [f"{p}: libraries {', '.join(v) or 'none'}" for p, v in libs.items()]
    spills = [r for r in rows if (r.get("n_spills") or 0) >= 1024]
    summary.append(f"{len(rows)} launches compiled or tried, {len(fails)} not ok (failed, over "
                   f"{SHARED_LIMIT // 1024} KB, or not launched); {len(spills)} spill 1 KB or "
                   "more a thread")  # fmt: skip
    print("\n".join(summary))
    if args.out:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=ROOT).stdout.strip()  # fmt: skip
        command = "python -m benchmarks.sm90_preflight " + " ".join(argv or sys.argv[1:])
        args.out.write_text(
            f"# sm_90 pre-flight\n\n`{command}`, {time.strftime('%Y-%m-%d')}, commit {commit}, "
            f"CPU cross-compile on {platform.machine()} ({os.cpu_count()} cores), triton "
            f"{triton.__version__}, {time.monotonic() - t0:.0f} s. Shared memory limit: "
            f"{SHARED_LIMIT // 1024} KB a block. Discover proposes each match's default config "
            "(the row that lists every parameter); the other rows are corners of the space the "
            "Triton lane tunes (its main match's: the GEMM or convolution if any).\n\n"
            + "\n".join(f"- {s}" for s in summary) + "\n\n" + HEAD + "\n"
            + "\n".join(_line(r) for r in rows) + "\n"
        )  # fmt: skip
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
