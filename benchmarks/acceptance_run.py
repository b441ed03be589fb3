"""What one device call of the GPU acceptance runs, and the record it writes.

The steps `benchmarks/gpu_acceptance.py` sequences: the GPU corpus, then per problem a bake-off
through the CLI and do_bench on the candidates it checked (`benchmarks/acceptance_peers.py`),
then identical code checked twice and ncu on a single kernel. Each step reads what the run
directories hold into plain dicts; `call_record` puts them into the record, and `merged` adds
it to the record of an earlier call at the same GPU path. Judging is
`benchmarks/acceptance_aims.py`'s, printing `benchmarks/acceptance_table.py`'s.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "benchmarks" / "acceptance"
ORDER = (
    "layernorm",
    "cross_entropy",
    "sum_reduction",
    "gemm_bias_gelu",
    "conv_relu_bias",
    "softmax_small",
    # KernelBench-shaped problems of issue #43 (fp32 GEMMs, a fused epilogue, a long row,
    # fp32 attention); `layernorm` above is its few-row LayerNorm over three dims
    "gemm_fp32_square",
    "bmm_fp32",
    "gemm_scale_leaky_relu",
    "softmax_long_row",
    "attention_fp32_hd128",
    # the shipped examples, as a user runs them: a Triton kernel, a Triton GEMM, CUDA C++
    "examples/softmax_triton",
    "examples/gemm_bias_gelu",
    "examples/rmsnorm_cuda",
)
RESULT = ROOT / "benchmarks" / "results" / "gpu_acceptance.json"
GPU_PATH = ("scripts", "tasks", "flows")  # what the before-stop hook holds the record to
# do_bench peers of a bake-off's candidates, by the name the bake-off gave them
PEER_KINDS = {
    "baseline": "eager",
    "torch-eager": "eager",
    "torch-compile-default": "compile default",
    "torch-compile-max-autotune": "max-autotune",
    "torch-compile-max-autotune-no-cudagraphs": "max-autotune, no CUDA graphs",
    "torch-compile-coordinate-descent": "compile coordinate descent",
}
SINGLE_KERNEL = ("sum_reduction", "baseline", "reduce_kernel")  # problem, candidate, kernel
# tests/test_check_gpu.py's cases that exist only on a GPU: side streams, memory that held the
# reference, illegal access, out of memory, L2 lines pinned past the flush
CORPUS_TESTS = "gpu_only or unjoined or device_faults or l2_persistence"
TWICE = ("cross_entropy", "layernorm")  # problems whose eager candidate is checked twice more
PER_SAMPLE_FIELDS = ("samples_ms", "overhang_ms", "gate_excess_ms", "sm_clock_mhz")
PEER_FIELDS = (
    "do_bench_ms",
    "do_bench_head_start_ms",
    "head_start_flushes",
    "host_queue_ms",
    "do_bench_profiled_ms",  # diagnostics, not judged (acceptance_peers)
    "cache",
)


class Deadline:
    """Seconds left of the call's `--deadline-s`, counted from the call's start."""

    def __init__(self, seconds: float):
        self.seconds, self.start = seconds, time.monotonic()

    def spent(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return self.seconds - self.spent()


STOP_GRACE_S = 60.0  # for a stopped `bakeoff run` to stop its checks, as after a Ctrl-C


def _sigint_as_at_a_terminal() -> None:
    # a caller started in the background (nohup, a device's runner) hands its children SIGINT
    # ignored, and Python then never turns it into KeyboardInterrupt: the stop below would wait
    # out its whole grace before killing
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def sh(argv, timeout, grace_s: float = STOP_GRACE_S, **kw) -> tuple[int, str, float]:
    """`argv`'s exit, output and wall seconds. Past `timeout` it is stopped as a user's Ctrl-C
    stops it: SIGINT to its process group, then SIGKILL to the group after `grace_s`. Killing
    only the command (as `subprocess.run`'s timeout does) left a stopped bake-off's checks running
    on the device while the next step timed its peers (the 363194c call: gemm_fp32_square's
    do_bench read 1.9x the harness's figures, against 0.3% at b129fc6)."""
    t0 = time.monotonic()
    p = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        start_new_session=True, preexec_fn=_sigint_as_at_a_terminal, **kw,
    )  # fmt: skip
    try:
        out, err = p.communicate(timeout=timeout)
        rc, said = p.returncode, ""
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGINT)
        try:
            out, err = p.communicate(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        rc, said = 124, f"\n(timed out after {timeout:.0f} s)"
    return rc, f"{out or ''}{err or ''}{said}", time.monotonic() - t0


# -- problems ------------------------------------------------------------------------------------


def problem_path(item: str) -> Path:
    """A name in benchmarks/acceptance/ (`layernorm`) or a path from the repository root, as a
    user would pass it to `bakeoff run` (`examples/softmax_triton`)."""
    if "/" in item or item.endswith(".py"):
        return ROOT / item
    return PROBLEMS / f"{item}.py"


def problem_name(item: str) -> str:
    """`layernorm`, or a path's parts joined (`examples-gemm_bias_gelu`: the acceptance set has
    a `gemm_bias_gelu` of its own)."""
    source = problem_path(item).relative_to(ROOT)
    if source.parent == PROBLEMS.relative_to(ROOT):
        return source.stem
    return "-".join(source.with_suffix("").parts)


# -- what a bake-off's run directory holds -------------------------------------------------------


def phase_seconds(run_dir: Path) -> dict[str, float]:
    """Seconds from each phase's start to the next one's (progress.json's `phase_started`)."""
    try:
        started = json.loads((run_dir / "progress.json").read_text()).get("phase_started") or {}
    except (OSError, ValueError):
        return {}
    from datetime import datetime

    stamps = sorted((datetime.fromisoformat(t), phase) for phase, t in started.items())
    return {a[1]: round((b[0] - a[0]).total_seconds(), 1) for a, b in zip(stamps, stamps[1:])}


def cli_seconds(run_dir: Path, wall_s: float) -> dict[str, float]:
    """Where `bakeoff run`'s time outside the flow's phases went (its `cli_timeline.json`):
    start (process start to the freeze), freeze (the CLI's own), server (waiting for Prefect's
    temporary server after the freeze), flow, and after (the flow's end to the process's exit,
    from this script's wall time)."""
    try:
        t = json.loads((run_dir / "cli_timeline.json").read_text())
    except (OSError, ValueError):
        return {}
    spans = {
        "start": ("process", "freeze"),
        "freeze": ("freeze", "frozen"),
        "server": ("frozen", "server"),
        "flow": ("server", "flow_done"),
    }
    out = {k: round(t[b] - t[a], 1) for k, (a, b) in spans.items() if t.get(a) and t.get(b)}
    if t.get("process") and t.get("flow_done"):
        out["after"] = round(wall_s - (t["flow_done"] - t["process"]), 1)
    return out


def precompile_lines(run_dir: Path) -> list[str]:
    """Discover's and the lanes' precompile log lines (how many at once, each candidate's
    seconds), each after the name of the log it is from."""
    found = []
    for log in [run_dir / "discover" / "lane.log", *sorted(run_dir.glob("lanes/*/lane.log"))]:
        try:
            text = log.read_text(errors="replace")
        except OSError:
            continue
        where = log.parent.name
        found += [f"{where}: {line}" for line in text.splitlines() if "precompil" in line]
    return found


def _median(lists) -> float | None:
    values = [x for xs in lists for x in (xs or [])]
    return statistics.median(values) if values else None


def candidate_cache(run_dir: Path, ref: dict, identity: str) -> Path:
    """The compiler cache a check of the run used (tasks/check/evaluate.py): the candidate's own, or
    for the frozen input checked as a candidate, the baseline's."""
    from kernel_bakeoff.scripts.freeze import run_baseline_cache

    if ref.get("mode") == "baseline":
        return run_baseline_cache(run_dir / "task")
    return run_dir / "compile-cache" / identity


def checked(run_dir: Path) -> list[dict]:
    """Every distinct check of a bake-off (tasks.check.evaluate keeps one per candidate identity)."""
    rows = []
    for path in sorted((run_dir / "checked").glob("*.json")):
        data = json.loads(path.read_text())
        ref, v = data["candidate"], data["verdict"]
        wls = v.get("workloads") or []
        timed = [w for w in wls if w.get("timing")]
        rows.append(
            {
                "name": ref["name"],
                "path": ref["path"],
                "env": ref.get("env") or {},
                "cache": str(candidate_cache(run_dir, ref, path.stem)),
                "status": v["status"],
                "reason": (v.get("reason") or "")[:300],
                "harness_ms": statistics.median(w["timing"]["median_ms"] for w in timed)
                if timed
                else None,
                "workload_ms": {w["workload"]: w["timing"]["median_ms"] for w in timed},
                "host_call_ms": (timed[0]["timing"].get("host_call_ms") if timed else None),
                "host_bound": sum(w["timing"].get("host_bound_samples", 0) for w in timed),
                "gate_flushes": _median(w["timing"].get("gate_flushes") for w in timed[:1]),
                "gate_excess_ms": _median(w["timing"].get("gate_excess_ms") for w in timed[:1]),
                "overhang_ms": _median(w["timing"].get("overhang_ms") for w in timed[:1]),
                "per_sample": per_sample(timed[:1]),
                "sm_clock_mhz": _median(
                    [x for x in w["timing"].get("sm_clock_mhz") or [] if x] for w in timed[:1]
                ),
                "beside_ms": (timed[0].get("baseline_ms") if timed else None),
                "frozen_ms": (timed[0].get("frozen_baseline_ms") if timed else None),
                "speedup": v.get("speedup"),
                "overhead_s_per_workload": (v.get("harness_seconds") or 0.0) / max(1, len(wls)),
                "candidate_s": v.get("candidate_seconds"),
                # where it went: the first workload compiles, another size may recompile
                "candidate_s_per_workload": {
                    w["workload"]: w.get("candidate_seconds") for w in wls
                },
                "phases": v.get("harness_phases"),
            }
        )
    return rows


def per_sample(workloads: list[dict]) -> dict:
    """The first timed workload's samples and what was added to them, the candidate's and the
    beside baseline's."""
    if not workloads:
        return {}
    w = workloads[0]
    both = {"candidate": w.get("timing") or {}, "baseline": w.get("baseline_timing") or {}}
    return {who: {k: t.get(k) for k in PER_SAMPLE_FIELDS} for who, t in both.items() if t}


def corpus_samples(where: Path) -> dict:
    """The side-stream pair's samples and overhangs, per workload, from the corpus's verdicts."""
    found = {}
    for path in sorted(where.glob("*.json")):
        v = json.loads(path.read_text())
        found[path.stem] = {
            "status": v["status"],
            "workloads": {
                w["workload"]: {k: (w.get("timing") or {}).get(k) for k in PER_SAMPLE_FIELDS}
                for w in v.get("workloads") or []
                if w.get("timing")
            },
        }
    return found


def floors_of(run_dir: Path) -> dict[str, dict]:
    """Per timed workload, the op's floor on this device and whether bytes set it (the report's
    roofline: tasks/check/roofline.py, flops and bytes from Discover's trace where the spec is silent)."""
    from kernel_bakeoff.tasks.report.html import discover_context, load_run

    try:
        context = discover_context(*load_run(run_dir))
    except (OSError, ValueError) as exc:
        print(f"  floors: {exc}", flush=True)
        return {}
    return {
        f.workload: {
            "floor_ms": context["floor_of"].get(f.workload),
            "memory_bound": (f.memory_floor_ms or 0.0) >= (f.compute_floor_ms or 0.0),
        }
        for f in context["floors"]
    }


def over_floor(row: dict | None, floors: dict[str, dict]) -> dict[str, float]:
    """The row's median per timed workload over that workload's floor."""
    ms = (row or {}).get("workload_ms") or {}
    return {w: ms[w] / f["floor_ms"] for w, f in floors.items() if f.get("floor_ms") and ms.get(w)}


# -- the field's figures: do_bench and ncu -------------------------------------------------------


def peer_items(run_dir: Path, rows: list[dict]) -> list[str]:
    """`acceptance_peers`' NAME=CANDIDATE@CACHE items: every candidate that passed (a Triton or
    CUDA C++ lane's too, so every kind has its do_bench figure), read from the cache its check
    filled, and the frozen baseline from the run's baseline cache, which its freeze built (so a
    CUDA C++ baseline, whose build is most of a check, is not built again). A candidate with an
    environment of its own (a tuned library's settings) is left out: this process cannot give
    it one."""
    from kernel_bakeoff.scripts.freeze import run_baseline_cache

    cache = run_baseline_cache(run_dir / "task")
    items = [f"baseline=baseline@{cache}"]
    items += [
        f"{r['name']}={r['path']}@{r['cache']}"
        for r in rows
        if r["status"] == "PASSED" and r["name"] != "baseline" and not r.get("env")
    ]
    return list(dict.fromkeys(items))


def peers(run_dir: Path, rows: list[dict], timeout: float) -> dict:
    """Per candidate, the peers process's line: do_bench's median, the SM clock read right
    after it, and do_bench again with a head start (`acceptance_peers`)."""
    items = peer_items(run_dir, rows)
    task = run_dir / "task"
    rc, out, _ = sh(
        [sys.executable, "-m", "benchmarks.acceptance_peers", str(task), *items], timeout
    )
    found = {}
    for line in out.splitlines():
        if line.startswith('{"peer"'):  # candidates may print lines of their own
            d = json.loads(line)
            found[d.pop("peer")] = d
    if rc != 0:
        print(f"  do_bench peers: exit {rc}: {out[-800:]}", flush=True)
    return found


def host_bound(row) -> bool:
    """Plain do_bench read part of the host's pace: given a head start it reads over 3% less.
    In records without the head-start figure (before it existed): do_bench reads over 1.5x the
    device time and queueing one call takes 80% of it or more."""
    lead = row.get("do_bench_head_start_ms")
    if lead:
        return lead < 0.97 * row["do_bench_ms"]
    host = row.get("host_call_ms") or 0
    return row["do_bench_ms"] > 1.5 * row["harness_ms"] and host >= 0.8 * row["do_bench_ms"]


def reference_ms(row) -> float | None:
    """The field's figure for a row: do_bench's median, or where that was host-bound, do_bench's
    with a head start (None for a host-bound row of an older record, which has none)."""
    if not row.get("do_bench_ms"):
        return None
    if not host_bound(row):
        return row["do_bench_ms"]
    return row.get("do_bench_head_start_ms")


def ncu_kernel_ms(task: Path, kernel: str, timeout: float, dirty: bool = False) -> float | None:
    """ncu's duration of `kernel` (median of its launches after two), on ncu's clean caches;
    `dirty`: on an L2 left full of dirty lines by a 256 MB write, as do_bench and the harness
    leave it (ncu's clean caches alone make a kernel read faster than do_bench does)."""
    argv = ["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv"]
    argv += ["--print-units", "base", "-k", f"regex:{kernel}", "--launch-skip", "2"]
    argv += ["--cache-control", "none"] if dirty else []
    argv += [sys.executable, "-m", "benchmarks.acceptance_peers", str(task), "--loop", "8"]
    argv += ["--dirty"] if dirty else []
    rc, out, _ = sh(argv, timeout)
    values = []
    for line in out.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 3 and cells[-3] == "gpu__time_duration.sum":
            values.append(float(cells[-1].replace(",", "")) / 1e6)  # ns -> ms
    if not values:
        print(f"  ncu: exit {rc}: {out[-800:]}", flush=True)
    return statistics.median(values) if values else None


def check_twice(task: Path, candidate: str, timeout: float) -> list[float]:
    medians = []
    for _ in range(2):
        argv = [
            sys.executable,
            "-m",
            "kernel_bakeoff.flows.cli",
            "check",
            str(task),
            candidate,
            "--json",
        ]
        rc, out, _ = sh(argv, timeout)
        line = next((x for x in out.splitlines()[::-1] if x.startswith("{")), None)
        if line is None:
            print(f"  check: exit {rc}: {out[-800:]}", flush=True)
            return medians
        v = json.loads(line)
        medians.append(v["workloads"][0]["timing"]["median_ms"] if v["status"] == "PASSED" else 0)
    return medians


def single_kernel_row(rows: list[dict]) -> dict | None:
    p, cand, _ = SINGLE_KERNEL
    return next((r for r in rows if r["problem"] == p and r["name"] == cand), None)


# -- the call's steps ----------------------------------------------------------------------------


def device_info(torch) -> dict[str, str]:
    props = torch.cuda.get_device_properties(0)
    return {
        "name": props.name,
        "arch": f"sm_{props.major}{props.minor}",
        "torch": torch.__version__,
        "triton": __import__("triton").__version__,
    }


def run_corpus(out: Path, deadline: Deadline) -> tuple[int, list[str]]:
    """The GPU corpus, every case rather than up to the first failure (one flaky case would hide
    the rest), its verdicts under `out`/corpus_verdicts. Run before the bake-offs, so that one
    that overruns cannot leave it unrun. Returns its exit and its summary line."""
    argv = [sys.executable, "-m", "pytest", "-q", "tests/test_check_gpu.py"]
    argv += ["-k", CORPUS_TESTS, "-p", "no:cacheprovider"]
    os.environ["BAKEOFF_GPU_VERDICTS"] = str(out / "corpus_verdicts")
    try:
        rc, text, _ = sh(argv, min(300.0, deadline.left()))
    finally:
        os.environ.pop("BAKEOFF_GPU_VERDICTS")
    (out / "corpus.log").write_text(text)
    tail = text.strip().splitlines()[-1:] if text else []
    if tail:
        print(f"  corpus: exit {rc}, {tail[0]}", flush=True)
    return rc, tail


def bake_off(source: Path, name: str, out: Path, budget: int, timeout: float):
    """`bakeoff run SOURCE --mode bakeoff --json` through the CLI into out/runs/NAME; its exit,
    wall seconds and report (None unless it exited 0). Its output goes to out/NAME.log."""
    run_dir = out / "runs" / name
    argv = [sys.executable, "-m", "kernel_bakeoff.flows.cli", "run", str(source)]
    argv += ["--mode", "bakeoff", "--json", "--run-dir", str(run_dir)]
    argv += ["--budget", str(budget)]
    rc, text, wall = sh(argv, timeout)
    (out / f"{name}.log").write_text(text)
    report = json.loads((run_dir / "report.json").read_text()) if rc == 0 else None
    return rc, wall, report


def with_peers(name: str, checks: list[dict], found: dict) -> list[dict]:
    """The bake-off's rows, each with its problem, its peer kind and its do_bench figures."""
    for r in checks:
        r["problem"] = name
        r["kind"] = PEER_KINDS.get(r["name"], "")
        mine = found.get(r["name"], {})
        r |= {k: mine.get(k) for k in PEER_FIELDS}
        r["do_bench_sm_clock_mhz"] = mine.get("sm_clock_mhz")
        if r["harness_ms"] and reference_ms(r):
            r["ratio"] = r["harness_ms"] / reference_ms(r)
    return checks


def problem_entry(name, rc, wall, run_dir: Path, report, checks, found) -> dict:
    """The record's line for one problem reached: exit, seconds and where they went, the winner
    and its figures beside the best do_bench peer's, and the winner over the op's floor."""
    winner = report["winner"] if report else None
    bench = {n: d["do_bench_ms"] for n, d in found.items() if n in PEER_KINDS}
    win_row = next((r for r in checks if winner and r["name"] == winner["name"]), None)
    entry = {
        "problem": name,
        "reached": True,
        "exit": rc,
        "wall_s": wall,
        "phases_s": phase_seconds(run_dir),
        "cli_s": cli_seconds(run_dir, wall),
        "precompile": precompile_lines(run_dir),
        "winner": winner["name"] if winner else None,
        "winner_speedup": winner["speedup"] if winner else None,
        "winner_ms": win_row["harness_ms"] if win_row else None,
        "winner_do_bench_ms": win_row["do_bench_ms"] if win_row else None,
        "eager_do_bench_ms": bench.get("baseline"),
        "best_peer_do_bench_ms": min(bench.values()) if bench else None,
    }
    entry["floors"] = floors_of(run_dir) if rc == 0 else {}
    kept = win_row or next((r for r in checks if r["name"] == "baseline"), None)
    entry["winner_over_floor"] = over_floor(kept, entry["floors"])
    return entry


def run_problem(item: str, out: Path, budget: int, reserve_s: float, deadline: Deadline):
    """One problem: its bake-off, then do_bench on the candidates it checked. Returns the
    problem's entry, its rows and its run directory; a problem started with less than 90 s
    plus `reserve_s` left is not reached (no rows, no directory)."""
    source, name = problem_path(item), problem_name(item)
    if deadline.left() < 90 + reserve_s:
        return {"problem": name, "reached": False}, [], None
    run_dir = out / "runs" / name
    rc, wall, report = bake_off(source, name, out, budget, max(60.0, deadline.left() - reserve_s))
    checks = checked(run_dir)
    found = peers(run_dir, checks, max(30.0, min(240.0, deadline.left() - 20)))
    rows = with_peers(name, checks, found)
    entry = problem_entry(name, rc, wall, run_dir, report, rows, found)
    print(f"  {name}: exit {rc}, {wall:.0f} s {entry['phases_s']} {entry['cli_s']}, winner {entry['winner']}", flush=True)  # fmt: skip
    return entry, rows, run_dir


def run_twice(rows: list[dict], runs: dict[str, Path], deadline: Deadline) -> list[dict]:
    """The eager candidate of each of TWICE checked twice more with `bakeoff check`."""
    twice = []
    for name in TWICE:
        eager = next((r for r in rows if r["problem"] == name and r["name"] == "baseline"), None)
        if eager and deadline.left() > 60:
            timeout = min(120.0, deadline.left() - 30)
            medians = check_twice(runs[name] / "task", eager["path"], timeout)
            twice.append({"problem": name, "medians_ms": medians})
    return twice


def run_ncu(runs: dict[str, Path], deadline: Deadline) -> dict:
    """ncu's duration of SINGLE_KERNEL on clean caches and on a dirty L2, where time is left."""
    p, cand, kernel = SINGLE_KERNEL
    ncu = {"candidate": f"{p}/{cand}", "kernel_ms": None, "dirty_l2_kernel_ms": None}
    if p in runs:
        for key, dirty in (("kernel_ms", False), ("dirty_l2_kernel_ms", True)):
            if deadline.left() > 45:
                timeout = min(90.0, deadline.left() - 20)
                ncu[key] = ncu_kernel_ms(runs[p] / "task", kernel, timeout, dirty)
    return ncu


def run_call(items, out: Path, budget: int, reserve_s: float, skip_corpus: bool, deadline):
    """Every step of one device call, in order: the corpus (unless skipped), each problem,
    identical code twice, ncu. Returns what `call_record` takes."""
    corpus_rc, corpus_tail = (None, []) if skip_corpus else run_corpus(out, deadline)
    problems, rows, runs = [], [], {}
    for item in items:
        entry, checks, run_dir = run_problem(item, out, budget, reserve_s, deadline)
        problems.append(entry)
        rows += checks
        if run_dir is not None:
            runs[entry["problem"]] = run_dir
    return {
        "rows": rows,
        "problems": problems,
        "identical_twice": run_twice(rows, runs, deadline),
        "ncu": run_ncu(runs, deadline),
        "corpus": corpus_tail,
        "corpus_rc": corpus_rc,
        "side_streams": corpus_samples(out / "corpus_verdicts"),
    }


# -- the record ----------------------------------------------------------------------------------


def gpu_path_digest() -> str:
    """sha256 over the GPU path's files (scripts/, tasks/, flows/; no git needed, the device
    has none): calls at commits whose GPU path is the same code may share one record."""
    h = hashlib.sha256()
    files = (f for d in GPU_PATH for f in (ROOT / d).rglob("*") if f.is_file())
    for f in sorted(f for f in files if "__pycache__" not in f.parts and f.suffix != ".pyc"):
        h.update(f"{f.relative_to(ROOT)}\0".encode() + f.read_bytes() + b"\0")
    return h.hexdigest()


def harness_settings() -> dict[str, str]:
    """The BAKEOFF_* variables this call runs under (BAKEOFF_PRELOAD_COMPILER=0 and the like
    change what the harness does as much as its code)."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("BAKEOFF_")}


def call_record(commit: str, settings: dict, device: dict, ran: dict, deadline) -> dict:
    """One call's record (before judging): its commit, GPU path and settings, the device, what
    `run_call` found, the call's seconds so far, and a `calls` list naming this call."""
    digest = gpu_path_digest()
    reached = [q["problem"] for q in ran["problems"] if q["reached"]]
    call = {"commit": commit, "problems": reached, "corpus": ran["corpus_rc"] is not None}
    return {
        "commit": commit,
        "gpu_path_sha256": digest,
        "settings": settings,
        "device": device,
        "rows": ran["rows"],
        "problems": ran["problems"],
        "identical_twice": ran["identical_twice"],
        "ncu": ran["ncu"],
        "corpus": ran["corpus"],
        "corpus_rc": ran["corpus_rc"],
        "side_streams": ran["side_streams"],
        "seconds": deadline.spent(),
        "calls": [call | ({"settings": settings} if settings else {})],
    }


def merged(record: dict, old: dict) -> dict:
    """This call's record added to the committed record of an earlier call whose GPU path was
    the same code, run under the same BAKEOFF_* settings (a whole acceptance takes more than
    one device call): a problem or check run again replaces the earlier one; `calls` names each
    call's commit and what it ran. (A record older than the hash merges only at the same
    commit.)"""
    if "gpu_path_sha256" in old:
        same = old["gpu_path_sha256"] == record["gpu_path_sha256"]
    else:
        same = old.get("commit") == record["commit"]
    if not same:
        was = old.get("gpu_path_sha256") or old.get("commit")
        print(f"  --merge: the record's GPU path is {was!r}, not this call's: not merged")
        return record
    if old.get("settings", {}) != record.get("settings", {}):
        print(f"  --merge: the record ran under {old.get('settings', {})}, this call under"
              f" {record.get('settings', {})}: not merged")  # fmt: skip
        return record
    done = {p["problem"] for p in record["problems"] if p["reached"]}
    kept = [p for p in old["problems"] if p["problem"] not in done and p["reached"]]
    unreached = [p for p in record["problems"] if not p["reached"]]
    problems = kept + [p for p in record["problems"] if p["reached"]]
    problems += [p for p in unreached if p["problem"] not in {q["problem"] for q in problems}]
    rows = [r for r in old["rows"] if r["problem"] not in done] + record["rows"]
    redone = {t["problem"] for t in record["identical_twice"]}
    twice = [t for t in old["identical_twice"] if t["problem"] not in redone]
    twice += record["identical_twice"]
    old_ncu = old.get("ncu") or {}
    ncu = {k: v if v is not None else old_ncu.get(k) for k, v in record["ncu"].items()}
    out = record | {"problems": problems, "rows": rows, "identical_twice": twice, "ncu": ncu}
    if record["corpus_rc"] is None:
        out |= {k: old.get(k) for k in ("corpus_rc", "corpus")}
    if not record["side_streams"]:
        out["side_streams"] = old.get("side_streams", {})
    out["calls"] = old.get("calls", [{"commit": old.get("commit")}]) + record["calls"]
    return out
