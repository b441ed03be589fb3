"""Discover on the shipped examples with an in-process check_fn."""

from kernel_bakeoff.tasks.backends import torch_compile
from kernel_bakeoff.tasks.discover.plan import discover
from tests.inprocess_check import make_check


def test_softmax_discover_measures_torch_and_plans_lanes(frozen_softmax, tmp_path, monkeypatch):
    monkeypatch.setenv("BAKEOFF_INTERPRETED_TEMPLATES", "1")  # templates on the CPU: asked for
    check = make_check(frozen_softmax, samples=2)
    plan = discover(frozen_softmax, tmp_path, check)
    # Library kernels (Liger's softmax where it is installed, as in CI) come on top of these.
    ours = [r for r in plan.measured if r.candidate.language != "library"]
    names = [r.candidate.name for r in ours]
    assert names[:-1] == ["baseline", "torch-eager", *torch_compile.DISCOVER_MODES]
    assert names[-1].startswith("template-softmax-")  # the traced reference's softmax
    assert all(r.verdict.passed for r in plan.measured), [r.verdict.reason for r in plan.measured]
    template = ours[-1].candidate
    assert template.language == "triton" and "rowwise.py.j2 (softmax;" in template.origin
    assert set(plan.baseline_ms) == {"square", "wide"}
    assert set(plan.best_known_ms) == {"square", "wide"} and plan.best_backend
    assert plan.env_candidate is None  # no tuned env backend runs on a CPU
    status = {s.name: s for s in plan.backends}
    assert not status["tunableop"].available and "no GPU" in status["tunableop"].reason
    assert status["triton"].available and "search lane" in status["triton"].reason
    lanes = [(p.language, p.mode) for p in plan.plan]
    assert lanes == [("triton", "optimize"), ("torch", "optimize")]
    assert "reference.py:softmax" in plan.plan[1].reason


def test_rmsnorm_plans_a_template_lane_for_triton(frozen_rmsnorm, tmp_path, monkeypatch):
    """The hand-written RMSNorm is traced and matched: Triton's lane tunes the norm template
    (on the CPU only when asked: BAKEOFF_INTERPRETED_TEMPLATES=1; without it, an author lane)."""
    check = make_check(frozen_rmsnorm, samples=1)
    plan = discover(frozen_rmsnorm, tmp_path / "a", check, backends=["triton"])
    assert [(p.language, p.mode) for p in plan.plan] == [
        ("torch", "optimize"),
        ("triton", "author"),
    ]
    status = {s.name: s for s in plan.backends}
    assert "BAKEOFF_INTERPRETED_TEMPLATES=1" in status["triton-templates"].reason
    assert plan.matches[0]["label"] == "rms_norm"  # traced and matched all the same
    monkeypatch.setenv("BAKEOFF_INTERPRETED_TEMPLATES", "1")
    check = make_check(frozen_rmsnorm, samples=1)
    plan = discover(frozen_rmsnorm, tmp_path, check, backends=["triton"])
    names = [r.candidate.name for r in plan.measured]
    assert names[0] == "baseline" and names[1].startswith("template-rms_norm-")
    assert plan.measured[1].verdict.passed, plan.measured[1].verdict.reason
    assert [b.name for b in plan.backends] == ["triton", "triton-templates"]
    assert [(p.language, p.mode) for p in plan.plan] == [
        ("torch", "optimize"),
        ("triton", "optimize"),
    ]
    assert "template norm.py.j2 for the traced rms_norm" in plan.plan[1].reason


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
