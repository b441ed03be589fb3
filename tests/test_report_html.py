"""report.html in Debian's headless Chromium: every plot drawn with every point its report
holds, no request made by the page, a screenshot kept, and the page linked as an artifact.

The run is a real bake-off: a round of the campaign that tests/conftest.py runs (the test
responders have copies of the baseline checked by the real harness). The screenshot goes to $BAKEOFF_TEST_ARTIFACTS
(default test-artifacts/ in the checkout)."""

import json
import os
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.check.roofline import DeviceRates, floors

from .browser import available, browser_run, dump_dom, screenshot
from .conftest import ROOT

pytestmark = pytest.mark.slow

ARTIFACTS = Path(os.environ.get("BAKEOFF_TEST_ARTIFACTS", ROOT / "test-artifacts"))


class PlotPoints(HTMLParser):
    """Counts elements whose class names `point` inside each `div.plot`, by the div's id."""

    def __init__(self):
        super().__init__()
        self.stack: list[str | None] = []  # the plot id each open element belongs to
        self.points: dict[str, int] = {}
        self.drawn: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        current = self.stack[-1] if self.stack else None
        if tag == "div" and "plot" in classes:
            current = attrs["id"]
            self.points.setdefault(current, 0)
            if "js-plotly-plot" in classes:
                self.drawn.add(current)
        if current is not None and "point" in classes:
            self.points[current] += 1
        if tag not in ("path", "rect", "br", "img", "meta", "input", "line", "circle"):
            self.stack.append(current)

    def handle_endtag(self, tag):
        if tag not in ("path", "rect", "br", "img", "meta", "input", "line", "circle"):
            self.stack.pop()


def expected_points(report: dict, floors: int) -> dict[str, int]:
    """Points each plot must show, counted from report.json alone."""
    timed = [r for r in report["rows"] if r["speedup"] is not None]
    lanes = {
        (lane["key"], c["candidate"]["name"]): c
        for lane in report["lanes"]
        for c in lane["candidates"]
    }
    expected = {"speedup-overall": 2 * len(timed)}  # a bar and its bar-to-beat tick
    measured = 0
    for name in report["baseline_ms"]:
        n = sum(1 for r in timed if r["speedups"].get(name) is not None)
        expected[f"speedup-{name}"] = 2 * n
    for r in report["rows"]:
        found = lanes.get((r["source"], r["name"]))
        measured += sum(1 for w in found["verdict"]["workloads"] if w["timing"]) if found else 0
    expected["roofline"] = measured + len(report["baseline_ms"]) + floors
    expected["timeline"] = sum(1 for lane in report["lanes"] if lane["lease"])
    return expected


@pytest.fixture(scope="module")
def quick_run(campaign_run):
    """The report of a real run: the campaign's (tests/conftest.py) final round."""
    return campaign_run[1]


@pytest.mark.skipif(not available(), reason="Debian's chromium is not installed (.ci/run does)")
def test_html_report_draws_every_point_and_requests_nothing(quick_run, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    page = Path(quick_run.html_path)
    assert page.is_file() and page.parent == Path(quick_run.run_dir)
    data = json.loads((page.parent / "report.json").read_text())
    text = page.read_text()
    assert "<script src" not in text and "<link" not in text  # everything inline

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report_html.png"
    control = tmp_path / "control.html"
    control.write_text('<html><body><img src="http://bakeoff.invalid/pixel.png"></body></html>')
    with browser_run() as (run, _):
        dom, requested = dump_dom(run, page)
        shot_requests = screenshot(run, page, shot)
        _, control_requested = dump_dom(run, control)
    assert requested == [] and shot_requests == []
    assert control_requested == ["http://bakeoff.invalid/pixel.png"]  # the check can see one
    assert shot.stat().st_size > 10_000

    counts = PlotPoints()
    counts.feed(dom)
    spec = OpSpec.model_validate_json((Path(quick_run.task_dir) / "spec.json").read_text())
    rates = DeviceRates(arch="cpu", bandwidth=1, peak_flops=1, source="measured", note="")
    floor_points = sum(bool(f.bytes) + bool(f.flops) for f in floors(spec, rates))
    want = expected_points(data, floor_points)
    assert counts.drawn == set(want), f"plots drawn: {counts.drawn}, expected {set(want)}"
    assert {k: counts.points[k] for k in want} == want
    assert all(v > 0 for v in want.values()), want

    assert "host" in dom.split('id="clock"')[1][:60]  # the clock the timings used
    fingerprint = json.loads((Path(quick_run.task_dir) / "fingerprint.json").read_text())
    assert fingerprint["torch"] in dom and "measured by the report on this host" in dom
    with get_client(sync_client=True) as client:  # every version of the key: other runs add some
        links = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                # keyed per deployment (or -cli): bakeoff-rmsnorm[-SCOPE]-report-html
                key=ArtifactFilterKey(like_="bakeoff-rmsnorm%report-html")
            )
        )
    assert any(page.resolve().as_uri() in link.data for link in links)
