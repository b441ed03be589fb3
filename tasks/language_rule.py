"""A candidate of language L runs L: the lane rule applied to every check's verdict.

A Triton lane's candidate (an author's, an optimizer's, a search's, Discover's) must launch at
least one Triton kernel in its checked calls; one that launched none (a "Triton" file that
returns the reference's or torch's answer) is FLAGGED with the reason "launched no Triton
kernel", whoever wrote it. The harness reports which kernels ran (`WorkloadVerdict.
triton_kernels`, scripts/launches.py); this side decides, so the verdict kept in the run's
`checked/` record stays the harness's own and a candidate met by two lanes is judged by each
lane's language. The frozen input checked as a candidate is the denominator, never refused.
CUDA and HIP lanes are not ruled yet: launches of a candidate's own compiled extension are not
recorded.
"""

from __future__ import annotations

from scripts.verdict import Status
from tasks.models import CandidateResult

NO_TRITON = "launched no Triton kernel in its checked calls: a Triton lane ranks only Triton"


def ruled(result: CandidateResult) -> CandidateResult:
    """`result`, FLAGGED where its language's rule refuses it; unchanged otherwise."""
    ref, v = result.candidate, result.verdict
    if ref.language != "triton" or ref.mode == "baseline" or not v.passed:
        return result
    if v.triton_kernels:
        return result
    verdict = v.model_copy(update={"status": Status.FLAGGED, "reason": NO_TRITON, "speedup": None})
    return result.model_copy(update={"verdict": verdict})
