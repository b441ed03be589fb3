"""The nightly regression compares: a recorded winner re-timed unchanged passes, the same
winner deliberately slowed is a regression and the flow run ends Failed (only then); and the
noise-aware rule on its own.

The nightly's checks run for real, with timings the test sets (tests/controlled_timings.py):
the recorded winner and the frozen baseline at the frozen figures, the slowed winner at four
times them, so "unchanged passes" does not depend on how busy this machine is between the
recording and the re-timing."""

import shutil
from datetime import UTC, datetime

import pytest

from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from kernel_bakeoff.tasks.history import records
from kernel_bakeoff.tasks.history.trend import compare

from .conftest import EXAMPLES

# 400 passes over x: far more work for the same answer (its timings are set by the test:
# slowed_fourfold)
SLOW = "    for _ in range(400):\n        x = x + 0.0\n"


def slowed_fourfold(task_dir, path) -> float:
    """The speedup a check of `path` is given: 0.25 for the kernel with SLOW in it, else 1.0."""
    kernel = path / "kernel.py" if path.is_dir() else path
    return 0.25 if SLOW in kernel.read_text() else 1.0


def timing(median, spread):
    return Timing(
        clock="host",
        sample_count=5,
        median_ms=median,
        min_ms=median,
        max_ms=median,
        spread_ms=spread,
        samples_ms=[median] * 5,
    )


def verdict(median, spread, status=Status.PASSED, beside=None):
    """`beside`: (median, spread) of the frozen baseline timed beside it in the same check."""
    wl = WorkloadVerdict(
        workload="w",
        status=status,
        timing=timing(median, spread) if status is Status.PASSED else None,
        reason=None if status is Status.PASSED else "wrong",
        baseline_timing=timing(*beside) if beside else None,
        baseline_ms=beside[0] if beside else None,
    )
    return Verdict(
        candidate="c",
        oracle_sha256="o",
        device="cpu",
        status=status,
        workloads=[wl],
        reason=None if status is Status.PASSED else "wrong",
    )


def accepted(median, spread, beside=None):
    return records.CandidateOut(
        name="c",
        language="torch",
        mode="optimize",
        source="torch",
        status="winner",
        verdict="PASSED",
        accepted=True,
        timings=[
            records.TimingOut(
                workload="w",
                status="PASSED",
                median_ms=median,
                spread_ms=spread,
                baseline_ms=beside[0] if beside else None,
                baseline_spread_ms=beside[1] if beside else None,
            )
        ],
    )


@pytest.mark.parametrize(
    "new, spread, regressed",
    [
        (1.25, 0.1, True),  # 0.25 ms slower, both spreads 0.2 ms
        (1.15, 0.1, False),  # slower, within both spreads
        (0.80, 0.1, False),  # faster
        (1.25, 0.2, False),  # the same slowdown, noisier tonight: within
    ],
)
def test_noise_aware_rule(new, spread, regressed):
    (change,) = compare(accepted(1.0, 0.1), verdict(new, spread))
    assert change.regressed is regressed, change.reason


@pytest.mark.parametrize(
    "new, base, regressed",
    [
        (1.25, 2.5, False),  # 25% slower and so was the baseline beside it: the host, not it
        (1.25, 2.0, True),  # 25% slower beside an unchanged baseline
        (1.00, 1.6, True),  # unchanged while the baseline beside it got 20% faster
        (1.05, 2.1, False),  # both 5% slower: within every spread
    ],
)
def test_the_rule_scales_by_the_baseline_timed_beside(new, base, regressed):
    old = accepted(1.0, 0.02, beside=(2.0, 0.04))
    (change,) = compare(old, verdict(new, 0.02, beside=(base, 0.04)))
    assert change.regressed is regressed, change.reason
    if regressed:
        assert "scaled by the baseline beside it" in change.reason
    (plain,) = compare(old, verdict(new, 0.02, beside=(base, 0.04)), beside=False)
    assert plain.regressed is (new > 1.04), plain.reason  # the frozen baseline's own rule


def test_a_result_that_no_longer_passes_regresses():
    (change,) = compare(accepted(1.0, 0.1), verdict(0, 0, Status.INCORRECT_NUMERICAL))
    assert change.regressed and "INCORRECT_NUMERICAL" in change.reason


@pytest.mark.slow
def test_nightly_detects_a_slowed_winner_and_passes_an_unchanged_one(
    prefect_api, frozen_rmsnorm, tmp_path, monkeypatch
):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    import kernel_bakeoff.flows.regression as regression_flow
    import kernel_bakeoff.scripts.check
    from kernel_bakeoff.flows.regression import regression

    from .controlled_timings import control_checks

    monkeypatch.setenv("BAKEOFF_LOCK_DIR", str(tmp_path / "locks"))
    control_checks(monkeypatch, slowed_fourfold)
    # the nightly's re-timings too (it binds `check` at import): with the machine's own
    # timings, the slowed winner read as noise when the suite's load moved them (a CI run)
    monkeypatch.setattr(regression_flow, "check", kernel_bakeoff.scripts.check.check)
    winner = tmp_path / "winner"
    shutil.copytree(frozen_rmsnorm / "baseline_src", winner)
    for p in [winner, *winner.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    v = kernel_bakeoff.scripts.check.check(frozen_rmsnorm, winner, samples=10)
    assert v.passed, v.reason
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    base = records.baseline_candidate(FrozenTask.open(frozen_rmsnorm))
    won = records.CandidateOut(
        name="winner",
        language="torch",
        mode="optimize",
        source="torch",
        status="winner",
        verdict="PASSED",
        accepted=True,
        speedup=v.speedup,
        path=str(winner),
        timings=records.timings_of(v),
    )
    last = records.RunOut(
        id="accepted-run",
        kernel="rmsnorm",
        kind="bakeoff",
        mode="optimize",
        kernel_path=str(EXAMPLES / "rmsnorm_torch"),
        run_dir=str(tmp_path / "run"),
        task_dir=str(frozen_rmsnorm),
        oracle_sha256="o",
        recorded_at=datetime.now(UTC),
        host="h",
        device="cpu",
        arch="cpu",
        code_version="v",
        winner="winner",
        winner_speedup=v.speedup,
        candidates=[base, won],
    )
    records.record(last, url)
    suite = tmp_path / "suite.toml"
    suite.write_text(f"[[kernels]]\npath = '{EXAMPLES / 'rmsnorm_torch'}'\n")
    common = dict(runs_root=str(tmp_path / "nightly"), history_url=url, samples=10)

    state = regression(str(suite), artifact_key="test-regress", return_state=True, **common)
    assert state.is_completed(), state.message
    (row,) = state.result()
    assert row["status"] == "ok" and row["winner"] == "winner", row

    kernel = winner / "kernel.py"  # the same answer, far more work
    kernel.write_text(kernel.read_text().replace("    variance =", SLOW + "    variance ="))
    state = regression(str(suite), artifact_key="test-regress", return_state=True, **common)
    assert state.is_failed() and "regression in rmsnorm" in state.message, [  # what it compared
        (r["changes"], r["baseline_changes"]) for r in state.result()
    ]
    summary = next((tmp_path / "nightly").glob("*/summary.md")).read_text()
    assert "| rmsnorm | regression:" in summary and "beyond both spreads" in summary
    with get_client(sync_client=True) as client:
        artifact = client.read_artifacts(  # the newest of the two nights' versions
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["test-regress"])),
            sort=ArtifactSort.CREATED_DESC,
        )[0]
    assert artifact.data == summary
    kinds = [r.kind for r in records.runs(url, "rmsnorm")]
    assert kinds == ["retime", "retime", "bakeoff"]
    # the regressed re-timing is not accepted: tomorrow compares with the last good result
    assert records.last_accepted(url, "rmsnorm").accepted.timings[0].median_ms < (
        records.runs(url, "rmsnorm")[0].candidate("torch").timings[0].median_ms
    )


@pytest.mark.slow
def test_the_one_command_creates_the_notification_automation(prefect_api, capsys):
    from prefect.client.orchestration import get_client

    from deployments.alerts import AUTOMATION, main

    for _ in range(2):  # running it again replaces, never duplicates
        assert main(["--webhook-url", "http://127.0.0.1:9/hook"]) == 0
    assert AUTOMATION in capsys.readouterr().out
    with get_client(sync_client=True) as client:
        (made,) = client.read_automations_by_name(AUTOMATION)
    assert made.trigger.expect == {"prefect.flow-run.Failed"}
    assert "regression" in made.trigger.match_related.get("prefect.resource.name")
    (action,) = made.actions
    assert action.type == "send-notification" and action.block_document_id
