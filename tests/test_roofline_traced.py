"""The trace's flops and bytes in the roofline (a KernelBench problem declares neither), and
Discover's table: each candidate's origin and its time over the floor."""

from kernel_bakeoff.scripts.formats import load_spec
from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from kernel_bakeoff.tasks.backends.trace import trace
from kernel_bakeoff.tasks.check.roofline import DeviceRates, floors
from kernel_bakeoff.tasks.discover import table as discover_table
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult, DiscoverPlan
from tests.conftest import EXAMPLES

RATES = DeviceRates(arch="x", bandwidth=1e12, peak_flops=1e15, source="datasheet", note="")


def test_a_kernelbench_gemm_gets_flops_and_a_compute_floor_from_its_trace():
    spec, src = load_spec(EXAMPLES / "kernelbench" / "matmul_gelu.py")
    (row,) = floors(spec, RATES)  # the spec alone: no flops, so no compute floor
    assert row.flops == 0 and row.compute_floor_ms is None
    traced = trace(spec, src, spec.entry)["workloads"]
    (row,) = floors(
        spec, RATES, {k: {"flops": v["flops"], "bytes": v["bytes"]} for k, v in traced.items()}
    )
    m, k, n = 64, 256, 128  # the problem's batch, in_features, out_features
    assert row.flops == 2 * m * n * k
    assert row.bytes == 4 * (m * k + n * k + n + m * n)  # x, weight, bias read; y written
    assert row.compute_floor_ms == 1e3 * row.flops / RATES.peak_flops
    assert row.bytes_rule.startswith("traced")


def test_declared_figures_win_over_the_trace():
    """The spec's flops and extra.bytes win; without extra.bytes the trace's bytes (outputs
    counted) replace the inputs-only lower bound."""
    spec, _ = load_spec(EXAMPLES / "rmsnorm_torch")
    traced = {w.name: {"flops": 1, "bytes": 7} for w in spec.workloads}
    rows = floors(spec, RATES, traced)
    assert [r.flops for r in rows] == [4 * 256 * 1024, 4 * 1024 * 512]  # the spec's flops
    assert [r.bytes for r in rows] == [7, 7] and rows[0].bytes_rule.startswith("traced")
    declared = spec.model_copy(update={"extra": {"bytes": "8*T*H"}})
    assert [r.bytes for r in floors(declared, RATES, traced)] == [8 * 256 * 1024, 8 * 1024 * 512]


def _result(name: str, origin: str, ms: float) -> CandidateResult:
    timing = Timing(
        clock="host",
        sample_count=1,
        median_ms=ms,
        min_ms=ms,
        max_ms=ms,
        spread_ms=0.0,
        samples_ms=[ms],
    )
    wl = WorkloadVerdict(
        workload="w", status=Status.PASSED, timing=timing, baseline_ms=2.0, speedup=2.0 / ms
    )
    verdict = Verdict(
        candidate=name,
        oracle_sha256="0",
        device="cpu",
        status=Status.PASSED,
        workloads=[wl],
        speedup=2.0 / ms,
    )
    ref = CandidateRef(name=name, language="triton", mode="optimize", path="/x", origin=origin)
    return CandidateResult(candidate=ref, verdict=verdict)


def test_discover_rows_carry_origin_and_distance_to_the_floor():
    spec, _ = load_spec(EXAMPLES / "softmax_triton")
    rows_floor = floors(spec.model_copy(update={"workloads": spec.workloads[:1]}), RATES)
    rows_floor[0].workload = "w"
    floor = max(rows_floor[0].memory_floor_ms or 0, rows_floor[0].compute_floor_ms or 0)
    origin = "triton-templates rowwise.py.j2 (softmax; passes=row)"
    plan = DiscoverPlan(baseline_ms={"w": 2.0}, measured=[_result("t", origin, 4 * floor)])
    (row,) = discover_table.rows(plan, rows_floor)
    assert row.origin == origin and abs(row.over_floor["w"] - 4.0) < 1e-9
    assert discover_table.matched_line(plan).startswith("no match in the traced reference")
    plan.matches = [
        {"label": "softmax", "how": "route", "dtype": "float32", "shapes": {"w": [64, 256]}}
    ]
    assert discover_table.matched_line(plan) == (
        "matched in the traced reference: softmax (route, float32, [64, 256])"
    )
