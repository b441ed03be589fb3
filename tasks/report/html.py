"""`report.html`: the bake-off in pictures, one self-contained page (plotly.js inlined).

Four views, each a plotly figure built here as plain JSON:
  speedup-overall      every timed candidate's overall speedup over the frozen baseline, the
                       spread as an error bar, and the bar it had to beat (1 + its margin)
  speedup-<workload>   the same per workload (candidate's relative IQR + the baseline's)
  roofline             every median time against the op's memory and compute floors here
  timeline             when each lane held which device
plus the device fingerprint, the clock the timings used and the candidate table. The page
makes no request when viewed: the script and the data are in it.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import jinja2

from kernel_bakeoff.scripts.baseline import FrozenBaseline
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks.check.roofline import DeviceRates, WorkloadFloor, device_rates, floors
from kernel_bakeoff.tasks.check.standing import baseline_stats
from kernel_bakeoff.tasks.discover import table as discover_table
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.models.run import CandidateRow, DiscoverOutcome, Report

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
PLOTLY = TEMPLATES / "vendor" / "plotly-basic-4.1.1.min.js"
COLORS = {
    "winner": "#1a9850",
    "eligible": "#4575b4",
    "within-spread": "#999999",
    "slower": "#bababa",
    "passed": "#74add1",
    "baseline": "#542788",
    "flagged": "#f46d43",
    "lane-failed": "#d73027",
}

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def label(row: CandidateRow) -> str:
    return f"{row.rank}. {row.name} [{row.origin()}]"


def results_by_row(report: Report, discovered: DiscoverOutcome | None) -> dict:
    """(source, candidate name) -> CandidateResult, for the timings behind each row."""
    found: dict[tuple[str, str], CandidateResult] = {}
    for lane in report.lanes:
        for r in lane.candidates:
            found[(lane.key, r.candidate.name)] = r
    if discovered is not None:
        plan = discovered.plan
        for r in plan.measured + ([plan.env_candidate] if plan.env_candidate else []):
            found[("discover", r.candidate.name)] = r
    return found


def _rel(result: CandidateResult | None, workload: str) -> float | None:
    if result is None:
        return None
    for w in result.verdict.workloads:
        if w.workload == workload and w.timing and w.timing.median_ms > 0:
            return w.timing.spread_ms / w.timing.median_ms
    return None


def _speedup_figure(title, names, speedups, errors, bars, statuses) -> dict:
    return {
        "data": [
            {
                "type": "bar",
                "name": "speedup (error bar: candidate + baseline spread)",
                "x": names,
                "y": speedups,
                "error_y": {  # a speedup is never below 0: the lower arm stops there
                    "type": "data",
                    "symmetric": False,
                    "array": errors,
                    "arrayminus": [min(e, y) for e, y in zip(errors, speedups)],
                    "visible": True,
                },
                "marker": {"color": [COLORS.get(s, "#cccccc") for s in statuses]},
                "customdata": statuses,
                "hovertemplate": "%{x}<br>%{y:.3f}x<br>%{customdata}<extra></extra>",
            },
            {
                "type": "scatter",
                "mode": "markers",
                "name": "bar to beat (1 + spread)",
                "x": names,
                "y": bars,
                "marker": {"symbol": "line-ew-open", "size": 28, "color": "#000000"},
                "hovertemplate": "had to beat %{y:.3f}x<extra></extra>",
            },
        ],
        "layout": {
            "title": {"text": title},
            "yaxis": {
                "title": {"text": "speedup over the frozen baseline (x)"},
                "rangemode": "tozero",
            },
            "shapes": [
                {
                    "type": "line",
                    "xref": "paper",
                    "x0": 0,
                    "x1": 1,
                    "y0": 1,
                    "y1": 1,
                    "line": {"dash": "dot", "color": "#542788"},
                }
            ],
            "margin": {"b": 160},
            "legend": {"orientation": "h", "y": 1.12},
        },
    }


def speedup_figures(report: Report, results: dict, base_spread: dict[str, float]) -> dict:
    """The overall chart from the rows (speedup, margin); each workload's from the same rows and
    the same spreads (the candidate's own plus the frozen baseline's): with one workload the
    two charts hold the same numbers."""
    timed = [r for r in report.rows if r.speedup is not None]
    figures = {
        "speedup-overall": _speedup_figure(
            "Overall speedup (geometric mean over workloads)",
            [label(r) for r in timed],
            [r.speedup for r in timed],
            [r.speedup * (r.margin or 0.0) for r in timed],
            [1 + r.margin if r.margin is not None else None for r in timed],
            [r.status for r in timed],
        )
    }
    for name in report.baseline_ms:
        rows, ys, errs, bars = [], [], [], []
        for r in timed:
            s = r.speedups.get(name)
            rel = _rel(results.get((r.source, r.name)), name)
            if s is None or rel is None:
                continue
            total = rel + base_spread.get(name, 0.0)
            rows.append(r)
            ys.append(s)
            errs.append(s * total)
            bars.append(1 + total)
        figures[f"speedup-{name}"] = _speedup_figure(
            f"Workload {name}: baseline {report.baseline_ms[name]:.4g} ms",
            [label(r) for r in rows],
            ys,
            errs,
            bars,
            [r.status for r in rows],
        )
    return figures


def roofline_figure(report: Report, results: dict, floor_rows: list[WorkloadFloor]) -> dict:
    """One trace per candidate, in its status's colour (so the legend's colour is its dots'),
    set side by side within each workload (`scattermode: group`): equal times never hide."""
    data = []
    for r in report.rows:
        result = results.get((r.source, r.name))
        timed = [w for w in (result.verdict.workloads if result else []) if w.timing is not None]
        if not timed:
            continue
        color = COLORS.get(r.status, "#cccccc")
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{label(r)} ({r.status})",
                "x": [w.workload for w in timed],
                "y": [w.timing.median_ms for w in timed],
                "marker": {"color": color, "size": 9, "line": {"width": 1, "color": "#222222"}},
                "hovertemplate": "%{fullData.name}<br>%{y:.4g} ms<extra></extra>",
            }
        )
    data.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": "frozen baseline",
            "x": list(report.baseline_ms),
            "y": list(report.baseline_ms.values()),
            "marker": {"symbol": "diamond", "size": 12, "color": COLORS["baseline"]},
        }
    )
    for key, what, color in (
        ("memory_floor_ms", "memory floor (bytes / bandwidth)", "#2166ac"),
        ("compute_floor_ms", "compute floor (flops / peak)", "#b2182b"),
    ):
        pts = [(f.workload, getattr(f, key)) for f in floor_rows if getattr(f, key)]
        if pts:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": what,
                    "x": [p[0] for p in pts],
                    "y": [p[1] for p in pts],
                    "marker": {"symbol": "line-ew-open", "size": 40, "color": color},
                }
            )
    layout = {
        "title": {"text": "Time against the op's floors on this device (log scale)"},
        # without a tickformat a log axis labels 0.02 ms as "2": the decimals are kept
        "yaxis": {"type": "log", "title": {"text": "median ms"}, "tickformat": ".4~g"},
        "xaxis": {"title": {"text": "workload"}},
        "scattermode": "group",
        "legend": {"orientation": "h", "y": -0.2},
    }
    return {"data": data, "layout": layout}


def timeline_figure(report: Report) -> dict:
    held = [lane for lane in report.lanes if lane.lease is not None and lane.lease.end]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": "lease",
            "y": [f"{lane.lease.device} @ {lane.lease.host}" for lane in held],
            "base": [lane.lease.start.isoformat() for lane in held],
            "x": [(lane.lease.end - lane.lease.start).total_seconds() * 1e3 for lane in held],
            "text": [f"{lane.key} ({lane.mode}, {lane.status})" for lane in held],
            "textposition": "inside",
            "marker": {
                "color": ["#4575b4" if lane.status == "completed" else "#d73027" for lane in held]
            },
            "hovertemplate": "%{text}<br>%{base} + %{x} ms<extra></extra>",
        }
    ]
    layout = {
        "title": {"text": "Lane timeline: which lane held which device, when"},
        "xaxis": {"type": "date", "title": {"text": "time (UTC)"}},
        "yaxis": {"type": "category"},
        "barmode": "overlay",
        "height": 160 + 50 * len({lane.lease.device for lane in held}),
    }
    return {"data": data, "layout": layout}


def clocks(results: dict, baseline: FrozenBaseline) -> dict:
    """Timing clocks used (baseline and candidates) and the median SM clock where recorded."""
    used = {w.clock for w in baseline.workloads.values() if w.clock}
    mhz = [m for w in baseline.workloads.values() for m in w.sm_clock_mhz]
    for result in results.values():
        for w in result.verdict.workloads:
            if w.timing is not None:
                used.add(w.timing.clock)
                mhz += [m for m in w.timing.sm_clock_mhz if m]
    mhz = [m for m in mhz if m]
    return {
        "timing": sorted(used) or ["none recorded"],
        "sm_clock_mhz": statistics.median(mhz) if mhz else None,
        "sm_clock_range": (min(mhz), max(mhz)) if mhz else None,
    }


def _script_json(data) -> str:
    return json.dumps(data).replace("</", "<\\/")


def build(
    report: Report,
    discovered: DiscoverOutcome | None = None,
    rates: DeviceRates | None = None,
    task: FrozenTask | None = None,
) -> tuple[str, dict]:
    """(the page, the figures in it) for a finished report, on its frozen task (opened here
    when the caller has not)."""
    task = task or report.frozen_task()
    spec, fingerprint, baseline = task.spec, task.fingerprint, task.baseline
    _, base_spread = baseline_stats(task)
    context = discover_context(report, discovered, rates, task)
    rates, floor_rows = context["rates"], context["floors"]
    results = results_by_row(report, discovered)
    figures = speedup_figures(report, results, base_spread)
    figures["roofline"] = roofline_figure(report, results, floor_rows)
    figures["timeline"] = timeline_figure(report)
    page = _env.get_template("report.html.j2").render(
        report=report,
        spec=spec,
        fingerprint=fingerprint,
        rates=rates,
        floors=floor_rows,
        clocks=clocks(results, baseline),
        base_spread=base_spread,
        figures=list(figures),
        figures_json=_script_json(figures),
        plotly_js=PLOTLY.read_text(),
        unleased=[lane for lane in report.lanes if lane.lease is None or not lane.lease.end],
        discover_rows=context["discover_rows"],
        matched=context["matched"],
    )
    return page, figures


def discover_context(
    report: Report,
    discovered: DiscoverOutcome | None,
    rates: DeviceRates | None = None,
    task: FrozenTask | None = None,
) -> dict:
    """The op's floors on the task's device, Discover's rows (each candidate's origin and its
    median over the floor) and its match line: computed here once, for report.html and
    report.md alike."""
    task = task or report.frozen_task()
    rates = rates or device_rates(task.fingerprint)
    floor_rows = floors(task.spec, rates, discovered.plan.traced if discovered else None)
    return {
        "rates": rates,
        "floors": floor_rows,
        "floor_of": {f.workload: discover_table.floor_ms(f) for f in floor_rows},
        "discover_rows": discover_table.rows(discovered.plan, floor_rows) if discovered else [],
        "matched": discover_table.matched_line(discovered.plan) if discovered else "",
    }


def write(
    report: Report, discovered: DiscoverOutcome | None = None, task: FrozenTask | None = None
) -> Path:
    page, _ = build(report, discovered, task=task)
    path = Path(report.run_dir) / "report.html"
    path.write_text(page)
    return path


def load_run(run_dir: Path) -> tuple[Report, DiscoverOutcome | None]:
    """The report of a finished run directory and Discover's outcome when it ran."""
    run_dir = Path(run_dir)
    report = Report.model_validate_json((run_dir / "report.json").read_text())
    outcome = run_dir / "discover" / "outcome.json"
    discovered = (
        DiscoverOutcome.model_validate_json(outcome.read_text()) if outcome.is_file() else None
    )
    return report, discovered
