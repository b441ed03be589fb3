"""The GPU acceptance's tables, as Markdown on stdout: the rows, the problems, the aims, and
ncu's line for the single kernel (the layout of `benchmarks/gpu_acceptance.md`'s tables)."""

from __future__ import annotations

from benchmarks.acceptance_run import single_kernel_row


def _fmt(v, p=4) -> str:
    return "-" if v is None else f"{v:.{p}g}"


def print_rows(rows: list[dict]) -> None:
    f = _fmt
    print("\n| problem | candidate | status | harness ms | do_bench ms | head start ms | ratio | host ms/call | gate | overhang ms | overhead s/wl |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['problem']} | {r['name']} | {r['status']} | {f(r['harness_ms'])} | "
              f"{f(r.get('do_bench_ms'))} | {f(r.get('do_bench_head_start_ms'))} | "
              f"{f(r.get('ratio'))} | {f(r['host_call_ms'], 3)} | {f(r.get('gate_flushes'))} | "
              f"{f(r.get('overhang_ms'), 3)} | "
              f"{f(r['overhead_s_per_workload'], 3)} |")  # fmt: skip


def print_problems(problems: list[dict]) -> None:
    f = _fmt
    print("\n| problem | wall s | winner | speedup | winner do_bench ms | best peer do_bench ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for p in problems:
        if not p["reached"]:
            print(f"| {p['problem']} | not reached | | | | |")
            continue
        print(f"| {p['problem']} | {p['wall_s']:.0f} | {p['winner'] or 'none (kept)'} | "
              f"{f(p['winner_speedup'])} | {f(p['winner_do_bench_ms'])} | "
              f"{f(p['best_peer_do_bench_ms'])} |")  # fmt: skip


def print_aims(aims: dict) -> None:
    print("\n| aim | target | value | met |")
    print("| --- | --- | --- | --- |")
    for name, a in aims.items():
        print(f"| {name} | {a['target']} | {a['value']} | {'yes' if a['met'] else 'NO'} |")


def print_table(rows, problems, twice, aims) -> None:
    print_rows(rows)
    print_problems(problems)
    for t in twice:
        print(f"identical code twice, {t['problem']}: {t['medians_ms']} ms")
    print_aims(aims)


def print_ncu(record: dict) -> None:
    """ncu's two figures for the single kernel beside the harness's and do_bench's, where the
    record has that kernel's row."""
    ncu, single = record.get("ncu") or {}, single_kernel_row(record["rows"])
    if single:
        print(f"ncu, {ncu.get('candidate')}: {ncu.get('kernel_ms')} ms on clean caches, "
              f"{ncu.get('dirty_l2_kernel_ms')} ms on a dirty L2; harness {single['harness_ms']}, "
              f"do_bench {single.get('do_bench_ms')}")  # fmt: skip


def print_record(record: dict) -> None:
    print_table(record["rows"], record["problems"], record["identical_twice"], record["aims"])
    print_ncu(record)
