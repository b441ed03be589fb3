"""Search lanes on the frozen softmax, every candidate checked (in-process check_fn)."""

import json

import pytest

from kernel_bakeoff.tasks.check.judgement import speed
from kernel_bakeoff.tasks.engine.search_lane import run_search
from tests.conftest import EXAMPLES
from tests.inprocess_check import make_check


def test_triton_lane_tunes_the_incumbent_and_prunes_wrong_configs(frozen_softmax, tmp_path):
    check = make_check(frozen_softmax, samples=1)
    results = run_search(
        frozen_softmax,
        "triton",
        "optimize",
        tmp_path / "w",
        check,
        budget_evals=20,
        budget_s=300,
        history_dir=tmp_path / "h",
    )
    assert len(results) == len(check.calls) == 11  # the whole BLOCK axis: exhaustive
    assert check.calls[0].params == {"BLOCK": None}  # the incumbent's own setting first
    passed = [r for r in results if speed(r.verdict) is not None]
    assert {r.candidate.params["BLOCK"] for r in passed} == {None, 1024, 2048, 4096, 8192}
    assert results[: len(passed)] == passed  # best first, failures last
    assert {r.verdict.status.value for r in results[len(passed) :]} == {"INCORRECT_NUMERICAL"}
    (store,) = (tmp_path / "h").iterdir()
    data = json.loads(store.read_text())
    assert data["language"] == "triton" and len(data["entries"]) == 11


def test_second_run_warm_starts_from_history(frozen_softmax, tmp_path):
    history = tmp_path / "h"
    first = make_check(frozen_softmax, samples=1)
    run_search(
        frozen_softmax,
        "triton",
        "optimize",
        tmp_path / "a",
        first,
        budget_evals=11,
        budget_s=300,
        history_dir=history,
    )
    entries = json.loads(next(history.iterdir()).read_text())["entries"]
    ranked = [e["config"] for e in entries if e["score"] is not None]
    second = make_check(frozen_softmax, samples=1)
    run_search(
        frozen_softmax,
        "triton",
        "optimize",
        tmp_path / "b",
        second,
        budget_evals=3,
        budget_s=300,
        strategy="random",
        history_dir=history,
    )
    # the incumbent's setting, then the best that the first run recorded (random draws none)
    expected = [{"BLOCK": None}] + [c for c in ranked[:3] if c != {"BLOCK": None}][:2]
    assert [c.params for c in second.calls] == expected


def test_torch_lane_space_and_budget(frozen_softmax, tmp_path):
    check = make_check(frozen_softmax, samples=1)
    results = run_search(
        frozen_softmax, "torch", "optimize", tmp_path / "w", check, budget_evals=2, budget_s=300
    )
    assert [r.candidate.name for r in results] and len(check.calls) == 2
    assert (
        check.calls[0].params["mode"] == "default"
        and not check.calls[0].params["coordinate_descent"]
    )
    assert all(r.verdict.passed for r in results)


def test_lanes_with_nothing_to_tune_return_nothing(frozen_softmax, frozen_rmsnorm, tmp_path):
    check = make_check(frozen_softmax, samples=1)
    kw = dict(budget_evals=4, budget_s=60)
    assert run_search(frozen_softmax, "cuda", "optimize", tmp_path / "c", check, **kw) == []
    assert run_search(frozen_softmax, "triton", "author", tmp_path / "a", check, **kw) == []
    # (without a GPU or BAKEOFF_INTERPRETED_TEMPLATES=1 the torch rmsnorm has no Triton template
    # to tune: with it, tests/test_template_lane.py)
    assert run_search(frozen_rmsnorm, "triton", "optimize", tmp_path / "r", check, **kw) == []
    assert check.calls == []
    with pytest.raises(ValueError, match="optimize or author"):
        run_search(frozen_softmax, "triton", "rewrite", tmp_path / "x", check, **kw)


def test_author_mode_tunes_the_given_source(frozen_softmax, tmp_path):
    source = tmp_path / "authored"
    source.mkdir()
    (source / "kernel.py").write_text((EXAMPLES / "softmax_triton" / "kernel.py").read_text())
    check = make_check(frozen_softmax, samples=1)
    results = run_search(
        frozen_softmax,
        "triton",
        "author",
        tmp_path / "w",
        check,
        budget_evals=2,
        budget_s=60,
        source=source,
        strategy="exhaustive",
    )
    assert len(results) == 2 and all(r.candidate.mode == "author" for r in results)


def test_a_lane_hands_what_it_will_check_to_precompile_first(frozen_softmax, tmp_path):
    from kernel_bakeoff.scripts.frozen_task import FrozenTask
    from kernel_bakeoff.tasks.check.evaluate import identity

    task = FrozenTask.open(frozen_softmax)
    check = make_check(frozen_softmax, samples=1)
    precompiled = []

    def precompile(refs):
        assert not check.calls  # before the first check
        precompiled.extend((r, identity(task, r, 1, 60)) for r in refs)

    run_search(
        frozen_softmax,
        "triton",
        "optimize",
        tmp_path / "w",
        check,
        budget_evals=3,
        budget_s=300,
        precompile_fn=precompile,
    )
    assert [r.name for r, _ in precompiled] == [c.name for c in check.calls]
    # built again for its check, the same files: the check finds the precompiled cache
    assert [key for _, key in precompiled] == [identity(task, c, 1, 60) for c in check.calls]
