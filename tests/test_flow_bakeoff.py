"""The bake-off flow on a real (temporary) Prefect server: lanes in parallel over the pool,
the report and its artifacts, reuse of finished lanes, and faults that fail one lane only.

The planner and the lanes' searches are the quick test responders (tests/role_doubles.py):
these tests are about the orchestration; `bakeoff run` in test_flow_cli runs the real ones."""

import itertools
import os

import pytest

from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.check.gpu_pool import DevicePool, resolve
from kernel_bakeoff.tasks.models.run import PoolConfig

from .conftest import EXAMPLES
from .role_doubles import QUICK

pytestmark = pytest.mark.slow


@pytest.fixture
def cpu_slots(tmp_path, monkeypatch):
    monkeypatch.setenv("BAKEOFF_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("BAKEOFF_CPU_SLOTS", "2")
    if len(resolve(PoolConfig()).ids) < 2:
        pytest.skip("needs two devices (or CPU slots) for lanes to overlap")
    return tmp_path / "locks"


def leases(report):
    return [lane.lease for lane in report.lanes if lane.lease is not None]


def assert_no_device_held_twice(report):
    for a, b in itertools.combinations(leases(report), 2):
        if a.device == b.device:
            assert a.end <= b.start or b.end <= a.start, f"{a.device} held by two lanes at once"


def overlapping(report) -> bool:
    return any(
        max(a.start, b.start) < min(a.end, b.end)
        for a, b in itertools.combinations(leases(report), 2)
    )


def all_devices_free(lock_dir) -> bool:
    pool = DevicePool(resolve(PoolConfig()), lock_dir=lock_dir)
    return all(holder is None for holder in pool.holders().values())


def read_artifact(key: str):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(  # the newest version: other tests publish the same keys
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
            sort=ArtifactSort.CREATED_DESC,
        )
    return found[0] if found else None


def test_lane_whose_agent_never_answers_fails_alone_and_a_rerun_redoes_only_it(
    prefect_api, cpu_slots, tmp_path, monkeypatch
):
    from kernel_bakeoff.flows.bakeoff import bakeoff
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    run_dir = tmp_path / "run"
    common = dict(
        kernel_path=str(EXAMPLES / "rmsnorm_torch"),
        mode="bakeoff",
        backends=["triton"],
        budget=1,
        run_dir=str(run_dir),
        agents={**QUICK, "reviewer": "tests.role_doubles:reviewer_down_in_triton"},
        agent_timeout_s=1.0,
        agent_retries=1,
    )
    monkeypatch.setenv("BAKEOFF_TEST_REVIEWER_DOWN", "1")
    report = bakeoff(BakeoffRequest(**common))
    lanes = {lane.key: lane for lane in report.lanes}
    assert list(lanes) == ["torch", "triton"]
    assert lanes["torch"].status == "completed"
    failed = lanes["triton"]
    assert failed.status == "failed" and failed.lease.end is not None
    assert "reviewer" in failed.reason and "2 attempts" in failed.reason
    assert "timeout" in failed.reason
    assert all(r.status == "lane-failed" for r in report.rows if r.source == "triton" and r.speedup)
    assert overlapping(report), "lanes did not run at the same time"
    assert_no_device_held_twice(report)
    assert all_devices_free(cpu_slots)

    markdown = (run_dir / "report.md").read_text()
    assert ("## Winner" in markdown) != ("the original kernel is kept" in markdown)
    assert read_artifact("bakeoff-rmsnorm-cli-report").data == markdown
    table = read_artifact("bakeoff-rmsnorm-cli-candidates")
    assert table.type == "table" and all(r.name in table.data for r in report.rows)
    assert str(run_dir) in read_artifact("bakeoff-rmsnorm-cli-run-dir").data

    monkeypatch.delenv("BAKEOFF_TEST_REVIEWER_DOWN")
    torch_result = run_dir / "lanes" / "torch" / "lane_result.json"
    stamp = os.stat(torch_result).st_mtime_ns
    again = bakeoff(BakeoffRequest(**common))
    lanes = {lane.key: lane for lane in again.lanes}
    assert lanes["torch"].reused and os.stat(torch_result).st_mtime_ns == stamp
    assert not lanes["triton"].reused and lanes["triton"].status == "completed"

    fresh = bakeoff(BakeoffRequest(**common, fresh=True))
    assert not any(lane.reused for lane in fresh.lanes)


def test_crashing_role_and_broken_candidates_are_recorded(prefect_api, cpu_slots, tmp_path):
    from kernel_bakeoff.flows.bakeoff import bakeoff
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    report = bakeoff(
        BakeoffRequest(
            kernel_path=str(EXAMPLES / "rmsnorm_torch"),
            mode="bakeoff",
            backends=["triton"],
            budget=1,
            run_dir=str(tmp_path / "run"),
            check_timeout_s=8,
            agents={
                **QUICK,
                "author": "tests.role_doubles:author_raises_in_triton",
                "optimizer": "tests.role_doubles:search_with_broken_candidates",
            },
        )
    )
    lanes = {lane.key: lane for lane in report.lanes}
    assert lanes["triton"].status == "failed"
    assert "RuntimeError: fault injected by the test" in lanes["triton"].reason
    assert lanes["triton"].lease.end is not None
    torch_lane = lanes["torch"]
    assert torch_lane.status == "completed"
    verdicts = {c.candidate.name: c.verdict for c in torch_lane.candidates}
    assert verdicts["dies"].status is Status.CRASHED and verdicts["dies"].reason
    assert verdicts["hangs"].status is Status.TIMEOUT and "8 s" in verdicts["hangs"].reason
    rows = {r.name: r for r in report.rows}
    assert rows["dies"].status == "CRASHED" and rows["hangs"].status == "TIMEOUT"
    assert all_devices_free(cpu_slots)


def test_a_failed_discover_is_said_and_the_input_language_still_competes(
    prefect_api, cpu_slots, tmp_path
):
    from kernel_bakeoff.flows.bakeoff import bakeoff
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    run_dir = tmp_path / "run"
    report = bakeoff(
        BakeoffRequest(
            kernel_path=str(EXAMPLES / "rmsnorm_torch"),
            mode="bakeoff",
            budget=1,
            run_dir=str(run_dir),
            agents={**QUICK, "planner": "tests.role_doubles:planner_raises"},
            agent_retries=0,
        )
    )
    [said] = [w for w in report.warnings if w.startswith("Discover failed")]
    assert "the planner fell over" in said and said.endswith("planned without it"), said
    assert [(lane.key, lane.status) for lane in report.lanes] == [("torch", "completed")]
    assert report.judged()  # so the run's conclusion stands, and says what it lacked
    assert said in (run_dir / "report.md").read_text()
    assert said in (run_dir / "report.html").read_text()
