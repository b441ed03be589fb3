"""The Triton search lane on a torch op tunes the traced match's template: every point a
candidate checked against the frozen reference (here in-process, under TRITON_INTERPRET=1)."""

import importlib.util
import os

import pytest

from kernel_bakeoff.tasks.engine.search_lane import run_search
from tests.inprocess_check import make_check

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or os.environ.get("TRITON_INTERPRET") != "1",
    reason="needs triton and its CPU interpreter (TRITON_INTERPRET=1, set by conftest on CPU)",
)


def test_triton_lane_tunes_the_rmsnorm_template(frozen_rmsnorm, tmp_path, monkeypatch):
    monkeypatch.setenv("BAKEOFF_INTERPRETED_TEMPLATES", "1")  # templates on the CPU: asked for
    check = make_check(frozen_rmsnorm, samples=1)
    results = run_search(
        frozen_rmsnorm, "triton", "optimize", tmp_path, check, budget_evals=2, budget_s=600
    )
    assert len(results) == 2
    for r in results:
        assert r.verdict.passed, r.verdict.reason
        assert r.candidate.origin.startswith("triton-templates search norm.py.j2 (rms_norm;")
        assert r.candidate.params["how"] == "whole"  # the hand-written RMSNorm is the reference
    configs = [r.candidate.params["config"] for r in results]
    assert len({str(c) for c in configs}) == 2  # two different points of the space
    assert {"passes", "BLOCK_N", "num_warps", "num_stages", "persistent", "SPLIT"} == set(
        configs[0]
    )
