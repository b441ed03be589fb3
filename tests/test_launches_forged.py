"""Candidates that forge "which Triton kernels ran" (tests/corpus/launches/), checked by the real
harness under TRITON_INTERPRET=1 and ruled as a Triton lane's: each ends FLAGGED with its
reason; the shipped Triton softmax is still accepted. None depends on this machine's speed:
what decides is which kernels were named, where they are defined, and how many elements
torch read."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.check.language_rule import NO_TRITON, ruled
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from tests.agent_kernels import frozen_tiny_softmax
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or os.environ.get("TRITON_INTERPRET") != "1",
    reason="needs triton and its CPU interpreter (TRITON_INTERPRET=1, set by conftest on CPU)",
)
CORPUS = Path(__file__).parent / "corpus" / "launches"


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("forged")
    return frozen_tiny_softmax(root)


def as_triton(task: Path, source: Path, tmp_path: Path) -> CandidateResult:
    """`source` as a Triton author's candidate: checked by the harness, ruled by the lane."""
    cand = tmp_path / source.stem
    cand.mkdir()
    shutil.copy(source, cand / "kernel.py")
    verdict = check(task, cand, timeout_s=300, samples=3, workdir=tmp_path / "work")
    ref = CandidateRef(name=source.stem, language="triton", mode="author", path=str(cand))
    return ruled(CandidateResult(candidate=ref, verdict=verdict))


# candidate -> what its verdict's reason must say
ATTACKS = {
    "hook_by_hand": NO_TRITON,  # the list, the recorder, `run` with a stand-in: nothing recorded
    "noop_launch_path": "replaced triton's",  # a `run` replaced before the wrapping: still seen
    "rewrites_record": "garbled",  # the results file is no longer where the record is read
    "writes_channel": "launches records came on the harness's channel",
    "library_kernel": "its own files define no @triton.jit function of",
    "trivial_kernel": "did the op's work in torch",
    "copy_kernel": "did the op's work in torch",
    "torch_ops_kernel": "did the op's work in torch",
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_forged_triton_candidate_is_refused_from_the_triton_lane(task, tmp_path, name):
    result = as_triton(task, CORPUS / f"{name}.py", tmp_path)
    v = result.verdict
    assert v.status is Status.FLAGGED, (v.status, v.reason, v.output_tail[-800:])
    assert ATTACKS[name] in v.reason, v.reason
    assert v.speedup is None


def test_the_shipped_triton_softmax_is_accepted_and_named(task, tmp_path):
    result = as_triton(task, EXAMPLES / "softmax_triton" / "kernel.py", tmp_path)
    v = result.verdict
    assert v.passed, (v.reason, v.output_tail[-800:])
    assert v.triton_kernels == ["_softmax_row"]
    timed = [w for w in v.workloads if not w.checked_only]
    assert timed and all(w.torch_work is not None for w in timed)  # observed after trial 1
    assert all(w.torch_work.share == 0 for w in timed), [w.torch_work for w in timed]
