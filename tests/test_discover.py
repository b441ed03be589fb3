"""Discover on the shipped examples with an in-process check_fn."""

from tasks.backends import torch_compile
from tasks.discover import discover
from tests.inprocess_check import make_check


def test_softmax_discover_measures_torch_and_plans_lanes(frozen_softmax, tmp_path):
    check = make_check(frozen_softmax, samples=2)
    plan = discover(frozen_softmax, tmp_path, check)
    names = [r.candidate.name for r in plan.measured]
    assert names == ["baseline", "torch-eager", *torch_compile.DISCOVER_MODES]
    assert all(r.verdict.passed for r in plan.measured)
    assert set(plan.baseline_ms) == {"square", "wide"}
    assert set(plan.best_known_ms) == {"square", "wide"} and plan.best_backend
    assert plan.env_candidate is None  # no tuned env backend runs on a CPU
    status = {s.name: s for s in plan.backends}
    assert not status["tunableop"].available and "no GPU" in status["tunableop"].reason
    assert status["triton"].available and "search lane" in status["triton"].reason
    lanes = [(p.language, p.mode) for p in plan.plan]
    assert lanes == [("triton", "optimize"), ("torch", "optimize")]
    assert "reference.py:softmax" in plan.plan[1].reason


def test_rmsnorm_plans_an_author_lane_for_triton(frozen_rmsnorm, tmp_path):
    check = make_check(frozen_rmsnorm, samples=1)
    plan = discover(frozen_rmsnorm, tmp_path, check, backends=["torch-compile", "triton"])
    assert [r.candidate.name for r in plan.measured][0] == "baseline"
    assert [b.name for b in plan.backends] == ["torch-compile", "triton"]
    assert [(p.language, p.mode) for p in plan.plan] == [
        ("torch", "optimize"),
        ("triton", "author"),
    ]


def test_a_failing_backend_is_reported_not_raised(frozen_rmsnorm, tmp_path, monkeypatch):
    def broken(ctx):
        raise RuntimeError("tuner crashed")

    monkeypatch.setattr(torch_compile.BACKEND, "candidates", broken)
    check = make_check(frozen_rmsnorm, samples=1)
    plan = discover(frozen_rmsnorm, tmp_path, check, backends=["torch"])
    status = {s.name: s for s in plan.backends}
    assert "tuner crashed" in status["torch-compile"].reason
    assert [r.candidate.name for r in plan.measured] == ["baseline"]
    assert plan.best_backend == "frozen baseline"
