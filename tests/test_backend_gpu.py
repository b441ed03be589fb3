"""On a GPU box, with the real harness: Discover's GPU backends and the Triton lane's launch
options. Run on the H200: `python -m pytest -q -m gpu tests/test_backend_gpu.py`."""

from pathlib import Path

import pytest
import torch

from kernel_bakeoff.scripts.freeze import freeze
from kernel_bakeoff.tasks.discover.plan import discover
from kernel_bakeoff.tasks.engine.search_lane import run_search
from kernel_bakeoff.tasks.models.plan import CandidateResult

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm device"),
]

GEMM_TOML = """
name = "linear_bf16"
kind = "gemm"
language = "torch"
entry = "kernel.py:linear"
[[inputs]]
name = "x"
shape = ["M", 4096]
dtype = "bfloat16"
[[inputs]]
name = "w"
shape = [4096, 4096]
dtype = "bfloat16"
[[workloads]]
name = "m2048"
dims = { M = 2048 }
"""


def harness(task: Path, work: Path):
    from kernel_bakeoff.scripts.check import check

    def check_fn(ref):
        verdict = check(
            task, Path(ref.path), candidate_env=ref.env or None, workdir=work / ref.name
        )
        return CandidateResult(candidate=ref, verdict=verdict)

    return check_fn


def test_gemm_discover_tunes_the_gemm_library(tmp_path):
    src = tmp_path / "op"
    src.mkdir()
    (src / "op.toml").write_text(GEMM_TOML)
    (src / "kernel.py").write_text(
        "import torch.nn.functional as F\n\n\ndef linear(x, w):\n    return F.linear(x, w)\n"
    )
    task = freeze(src, tmp_path / "task")
    plan = discover(task, tmp_path / "work", harness(task, tmp_path / "check"))
    by_name = {r.candidate.name: r for r in plan.measured}
    tuned = by_name["tunableop"]
    assert tuned.candidate.mode == "tuned-env" and tuned.candidate.artifacts
    assert all(Path(a).is_file() for a in tuned.candidate.artifacts)
    assert tuned.verdict.passed, tuned.verdict.reason
    assert by_name["torch-compile-default"].verdict.passed
    assert plan.best_known_ms["m2048"] > 0


def test_triton_lane_tunes_launch_options_on_the_device(frozen_softmax, tmp_path):
    task = frozen_softmax
    results = run_search(
        task,
        "triton",
        "optimize",
        tmp_path / "w",
        harness(task, tmp_path / "check"),
        budget_evals=6,
        budget_s=600,
        history_dir=tmp_path / "h",
    )
    assert len(results) == 6
    assert "num_warps" in results[0].candidate.params
    assert results[0].verdict.passed, results[0].verdict.reason
