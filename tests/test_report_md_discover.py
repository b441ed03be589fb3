"""report.md shows what report.html does about each candidate: where it came from (library and
version, template and configuration, compile mode) and its median over the op's floor, from the
same computation (report_html.discover_context); a report rendered without it stays as it was."""

from kernel_bakeoff.tasks.models.plan import DiscoverPlan
from kernel_bakeoff.tasks.models.run import DiscoverOutcome
from kernel_bakeoff.tasks.report import html as report_html
from kernel_bakeoff.tasks.report.ranking import rank
from kernel_bakeoff.tasks.report.render import render
from tests import test_report_html_figures as figs
from tests.task_doubles import unverified
from tests.test_report_html_figures import RATES, report_of, result

one_workload_task = figs.one_workload_task  # the same fixture: one workload, 5.712 ms frozen

ORIGIN = "liger-kernel 0.8.5: swiglu"
TEMPLATE = "triton-templates gated.py.j2 (swiglu; BLOCK_M=4, BLOCK_N=1024)"


def _discovered() -> DiscoverOutcome:
    lib, tpl = result("liger-swiglu", 0.004, 5.7, 0.02), result("tpl-swiglu", 0.010, 5.7, 0.02)
    lib.candidate.origin, tpl.candidate.origin = ORIGIN, TEMPLATE
    # the trace's bytes: 4.22 MB at 4.22 TB/s is a 0.001 ms memory floor (flops: the spec's)
    plan = DiscoverPlan(
        baseline_ms={"tokens_1k": 5.712},
        measured=[lib, tpl],
        traced={"tokens_1k": {"flops": 0, "bytes": 4_220_000}},
        matches=[{"label": "swiglu", "how": "route", "dtype": "float32",
                  "shapes": {"tokens_1k": [1024, 512]}}],
    )  # fmt: skip
    return DiscoverOutcome(plan=plan)


def test_report_md_names_each_candidates_origin_and_its_distance_to_the_floor(
    one_workload_task,
):
    found = _discovered()
    base = report_of(one_workload_task)
    rows, winner = rank(base.lanes, found, one_workload_task)
    report = base.model_copy(update={"rows": rows, "winner": winner})
    context = report_html.discover_context(report, found, RATES, unverified(one_workload_task))
    assert context["floor_of"]["tokens_1k"] == 0.001  # 4.22e6 B / 4.22e12 B/s, in ms
    text = render("report.md.j2", report=report, **context)
    section = text.split("## Discover: what exists for the op")[1].split("## Lanes")[0]
    assert "matched in the traced reference: swiglu (route, float32, [1024, 512])" in section
    assert f"| liger-swiglu | {ORIGIN} | PASSED | 0.004 | 4.00x |" in section
    assert f"| tpl-swiglu | {TEMPLATE} | PASSED | 0.01 | 10.00x |" in section
    ranked = text.split("## Candidates")[1].split("### The baseline timed beside")[0]
    (line,) = [row for row in ranked.splitlines() if row.startswith("| 1 | liger-swiglu |")]
    assert f"discover: {ORIGIN}" in line and "(0.004 ms, 4.00x floor)" in line
    beside = text.split("### The baseline timed beside")[1].split("## Discover")[0]
    lines = [row.strip() for row in beside.splitlines()]
    assert "| liger-swiglu | 5.7 ms |" in lines  # a row a line, not run together
    # the HTML report's Discover table holds the same figures (one computation for both)
    page, _ = report_html.build(report, found, RATES, unverified(one_workload_task))
    assert ORIGIN in page and "<td>4.00x</td>" in page


def test_report_md_without_discover_has_no_floor_figures(one_workload_task):
    text = render("report.md.j2", report=report_of(one_workload_task))
    assert "## Discover" not in text and "x floor" not in text
