"""The GPU acceptance's aims, judged from a record's rows (no GPU needed).

`judge(record)` returns each aim's target, value and whether it was met. The rows stay as the
device wrote them, so a change to the judging is applied to a committed record with
`python3 benchmarks/gpu_acceptance.py --rejudge`. What each aim asks, and why, is in
`benchmarks/gpu_acceptance.md`, "Aims".
"""

from __future__ import annotations

import math
import statistics

from benchmarks.acceptance_run import (
    ORDER,
    PEER_KINDS,
    host_bound,
    problem_name,
    reference_ms,
    single_kernel_row,
)

ACCEPTANCE_SET = tuple(p for p in ORDER if "/" not in p)  # KernelBench level-1/2 problems
# A floor under a kernel launch's own time says nothing of the kernel: a small op's floor can
# be far under what any launch takes.
LAUNCH_MS = 0.005
SMALLEST_MS = 0.01  # under 10 us do_bench times launch gaps, head start or not


def aim(aims: dict, name: str, target: str, value, met: bool) -> None:
    aims[name] = {"target": target, "value": value, "met": bool(met)}


def judge(record: dict) -> dict:
    rows, problems, twice = record["rows"], record["problems"], record["identical_twice"]
    aims: dict = {}
    reached = [p for p in problems if p["reached"] and p["exit"] == 0]
    every_kind_aim(aims, rows, problems, reached)
    device_time_aims(aims, rows)
    ncu_aim(aims, record.get("ncu") or {}, single_kernel_row(rows))
    spreads = [abs(t["medians_ms"][0] / t["medians_ms"][1] - 1) for t in twice if len(t["medians_ms"]) == 2 and all(t["medians_ms"])]  # fmt: skip
    aim(aims, "identical code in two checks", "within 1%", max(spreads) if spreads else None,
        bool(spreads) and max(spreads) <= 0.01)  # fmt: skip
    slower = winner_aims(aims, rows, reached)
    model_free_aims(aims, reached, rows, slower)
    overhead = [r["overhead_s_per_workload"] for r in rows if r["status"] == "PASSED"]
    aim(aims, "harness overhead per candidate-workload", "<= 1.5 s (median; max beside)",
        {"median": statistics.median(overhead), "max": max(overhead)} if overhead else None,
        bool(overhead) and statistics.median(overhead) <= 1.5)  # fmt: skip
    walls = [p["wall_s"] for p in reached]
    aim(aims, "whole bake-off of one problem", "< 180 s", max(walls) if walls else None,
        bool(walls) and max(walls) < 180)  # fmt: skip
    corpus_rc = record.get("corpus_rc")
    aim(aims, "GPU corpus (streams, illegal access, OOM)", "passes", corpus_rc, corpus_rc == 0)
    return aims


def every_kind_aim(aims: dict, rows: list[dict], problems: list[dict], reached: list[dict]):
    """No harness failure, no crash, and every problem done: those of the record, and every one
    of the default list, which no call may have reached."""
    broken = [f"{r['problem']}/{r['name']}" for r in rows if r["status"] == "HARNESS_ERROR"]
    crashed = [f"{r['problem']}/{r['name']}" for r in rows if r["status"] in ("CRASHED",)]
    done = {p["problem"] for p in reached}
    unreached = [p["problem"] for p in problems if p["problem"] not in done]
    unreached += [n for n in map(problem_name, ORDER) if n not in done and n not in unreached]
    aim(aims, "every candidate kind runs", "no harness failure, no crash, every problem done",
        {"harness_errors": broken, "crashed": crashed, "not_done": unreached},
        not broken and not crashed and not unreached)  # fmt: skip


def device_time_aims(aims: dict, rows: list[dict]) -> None:
    """The harness's device time against the field's figure, per band of that figure. Where
    plain do_bench read the host's pace, the harness is compared with do_bench given a head
    start (`reference_ms`); rows of older records without one are named, not compared."""
    timed = [r for r in rows if r.get("harness_ms") and r.get("do_bench_ms")]
    bound_rows = [f"{r['problem']}/{r['name']}" for r in timed if host_bound(r)]
    for lo, hi, bound in ((0.1, float("inf"), 0.03), (0.01, 0.1, 0.05)):
        gaps = [
            abs(r["harness_ms"] / reference_ms(r) - 1)
            for r in timed
            if reference_ms(r) and lo <= reference_ms(r) < hi
        ]
        label = ">= 100 us" if hi == float("inf") else "10-100 us"
        value = {"worst": max(gaps) if gaps else None, "compared": len(gaps)}
        if lo < 0.1:
            value["host_bound"] = bound_rows
            value["host_bound_not_compared"] = [
                f"{r['problem']}/{r['name']}"
                for r in timed
                if host_bound(r) and not reference_ms(r)
            ]
        aim(aims, f"device time vs do_bench ({label})", f"within {bound:.0%}",
            value, bool(gaps) and max(gaps) <= bound)  # fmt: skip


def winner_aims(aims: dict, rows: list[dict], reached: list[dict]) -> dict:
    """Each problem's winner against its fastest do_bench peer, and its speedup against
    do_bench's; each problem's figures are in the value, so a met aim shows what met it.
    Returns the first aim's per-problem values, which the model-free aims read."""
    slower, disagree = {}, {}
    for p in reached:
        mine = [r for r in rows if r["problem"] == p["problem"]]
        gap = _winner_vs_peers(p, mine)
        if gap:
            slower[p["problem"]] = gap
        win = next((r for r in mine if r["name"] == p["winner"]), None)
        base = next((r for r in mine if r["name"] == "baseline"), None)
        pair = _speedup_pair(base, win) if win and base else None
        if pair:
            theirs = pair[0] / pair[1]
            disagree[p["problem"]] = {
                "harness": p["winner_speedup"],
                "do_bench": theirs,
                "gap": p["winner_speedup"] / theirs - 1,
            }
    compared = [v for v in slower.values() if "gap" in v]
    aim(aims, "winner not slower than the best peer", "within 3% (do_bench; with a head start where plain do_bench times the host)", slower,
        bool(compared) and all(v["gap"] <= 0.03 for v in compared))  # fmt: skip
    aim(aims, "winner's speedup vs do_bench's", "within 3%", disagree,
        bool(disagree) and all(abs(v["gap"]) <= 0.03 for v in disagree.values()))  # fmt: skip
    return slower


def model_free_aims(aims: dict, reached: list[dict], rows: list[dict], slower: dict) -> None:
    """[J]'s aims for the bake-off without a model: a winner beyond the best of eager and
    torch.compile's modes on most problems (faster by more than do_bench's 3% agreement), a
    geometric mean over eager of 2.0x on the acceptance set (the best compile mode's beside it),
    and every winner of a memory-bound op within 1.3x of its floor."""
    compared = {n: v for n, v in slower.items() if "gap" in v}
    beyond = sorted(n for n, v in compared.items() if v["gap"] < -0.03)
    aim(aims, "winner beyond the best of eager and compile", "on most problems (> half)",
        {"beyond": beyond, "compared": len(compared)},
        bool(compared) and len(beyond) > len(compared) / 2)  # fmt: skip
    ours, compiled = {}, {}
    for p in reached:
        if p["problem"] not in ACCEPTANCE_SET:
            continue
        ours[p["problem"]] = p["winner_speedup"] or 1.0  # no winner: the baseline is kept
        mine = {r["name"]: reference_ms(r) for r in rows if r["problem"] == p["problem"]}
        peers = [ms for n, ms in mine.items() if n in PEER_KINDS and n != "baseline" and ms]
        if mine.get("baseline") and peers:
            compiled[p["problem"]] = mine["baseline"] / min(peers)
    geo = lambda xs: math.exp(statistics.fmean(map(math.log, xs))) if xs else None  # noqa: E731
    value = {"geomean": geo(list(ours.values())), "per_problem": ours,
             "best_compile_geomean": geo(list(compiled.values())), "best_compile": compiled}  # fmt: skip
    aim(aims, "geometric mean over eager (acceptance set)", ">= 2.0x", value,
        bool(ours) and value["geomean"] >= 2.0)  # fmt: skip
    distance, launch_bound = {}, {}
    for p in reached:
        floors = p.get("floors") or {}
        tiny = [w for w, f in floors.items() if (f.get("floor_ms") or 0) < LAUNCH_MS]
        if tiny:
            launch_bound[p["problem"]] = tiny
        bound = [w for w, f in floors.items() if f.get("memory_bound") and w not in tiny]
        ratios = [p.get("winner_over_floor", {}).get(w) for w in bound]
        if ratios and all(ratios):
            distance[p["problem"]] = max(ratios)
    value = {"worst_over_floor": distance, "launch_bound_not_judged": launch_bound}
    aim(aims, "memory-bound winners near the floor", "within 1.3x of the roofline floor",
        value, bool(distance) and max(distance.values()) <= 1.3)  # fmt: skip


def ncu_aim(aims: dict, ncu: dict, single: dict | None) -> None:
    """The harness against ncu's duration of the single kernel. ncu invalidates the caches
    before each kernel by default, do_bench and the harness flush by writing, so their kernel
    starts on an L2 full of dirty lines, which alone makes it read slower than ncu's (the record
    keeps both ncu figures). The aim reads ncu in the harness's own cache state,
    `--cache-control none` after a 256 MB write, where the record has that figure; the clean
    figure's gap is beside it."""
    dirty, clean = ncu.get("dirty_l2_kernel_ms"), ncu.get("kernel_ms")
    ours = single["harness_ms"] if single else None
    value = {"harness_ms": ours, "ncu_dirty_l2_ms": dirty, "ncu_clean_ms": clean}
    for key, theirs in (("gap_dirty_l2", dirty), ("gap_clean", clean)):
        value[key] = abs(ours / theirs - 1) if ours and theirs else None
    gap = value["gap_dirty_l2"] if dirty else value["gap_clean"]
    target = "within 3% (ncu on a dirty L2, as the harness and do_bench time; clean caches beside)"
    aim(aims, "device time vs ncu (single kernel)", target, value, gap is not None and gap <= 0.03)


def _winner_vs_peers(problem: dict, rows: list[dict]) -> dict | None:
    """The bake-off's winner (the baseline where it kept it) against the fastest of its do_bench
    peers (eager, compile default, max-autotune, coordinate descent), each by `reference_ms`
    (a winner of another kind, a template or a library, by its own do_bench row);
    a host-bound row of an older record, without a head-start figure, by the harness's device
    time, which is what the bake-off ranks on. So is every row of a problem whose fastest peer
    is under 10 us, outside both device-time aims: do_bench there reads launch gaps, head start
    or not, where the harness reads the kernel. The value names the host-bound rows, and `by`
    says when the device time was used for all."""
    figures = {}
    for r in rows:
        if r["name"] in PEER_KINDS and r.get("do_bench_ms") and r.get("harness_ms"):
            figures[r["name"]] = (reference_ms(r) or r["harness_ms"], host_bound(r))
    tiny = bool(figures) and min(ms for ms, _ in figures.values()) < SMALLEST_MS
    if tiny:
        by_name = {r["name"]: r["harness_ms"] for r in rows}
        figures = {n: (by_name[n], host) for n, (_, host) in figures.items()}
    mine_name = problem["winner"] or "baseline"
    mine = figures.get(mine_name)
    if mine is None:  # a template, library or lane kernel: its own do_bench row
        own = next((r for r in rows if r["name"] == mine_name and r.get("do_bench_ms")), None)
        if own and own.get("harness_ms"):
            ms = own["harness_ms"] if tiny else reference_ms(own) or own["harness_ms"]
            mine = (ms, host_bound(own))
    if mine is None:
        return {"winner": mine_name, "not_compared": "the winner has no do_bench figure"}
    if not figures or (mine_name in figures and len(figures) < 2):
        return None
    best = min(figures, key=lambda n: figures[n][0])  # the peers (the winner, if one of them)
    mine_ms = mine[0]
    if mine_name not in figures and mine[1]:
        figures = {**figures, mine_name: mine}  # named among the host-bound rows below
    return {
        "winner": mine_name,
        "winner_ms": mine_ms,
        "best_peer": best,
        "best_peer_ms": figures[best][0],
        "gap": mine_ms / figures[best][0] - 1,
        "host_bound": sorted(n for n, (_, host) in figures.items() if host),
    } | ({"by": "the harness's device time: the fastest peer is under 10 us"} if tiny else {})


def _speedup_pair(base: dict, win: dict) -> tuple[float, float] | None:
    """do_bench's figures for the baseline and the winner, taken the same way: with the head
    start for both where either is host-bound (a plain figure over a head-start one would mix
    the host's pace into the ratio), else `reference_ms` of each."""
    if (host_bound(base) or host_bound(win)) and all(
        r.get("do_bench_head_start_ms") for r in (base, win)
    ):
        return base["do_bench_head_start_ms"], win["do_bench_head_start_ms"]
    if reference_ms(base) and reference_ms(win):
        return reference_ms(base), reference_ms(win)
    return None
