"""A candidate of language L runs L: the lane rule applied to every check's verdict.

A Triton lane's candidate (an author's, an optimizer's, a search's, Discover's) must launch at
least one Triton kernel in its checked calls; one that launched none (a "Triton" file that
returns the reference's or torch's answer) is FLAGGED with the reason "launched no Triton
kernel", whoever wrote it. The harness reports which kernels ran (`WorkloadVerdict.
triton_kernels`, scripts/launches.py); this side decides, so the verdict kept in the run's
`checked/` record stays the harness's own and a candidate met by two lanes is judged by each
lane's language. The frozen input checked as a candidate is the denominator, never refused.
A CUDA or HIP lane's candidate must call its own compiled code in its checked calls: a function
of a module load_inline or load built for it, or a hip-python launch (`WorkloadVerdict.
extension_calls`); one that called none is FLAGGED "called no compiled kernel of its own".
"""

from __future__ import annotations

from scripts.verdict import Status
from tasks.models import CandidateResult

NO_TRITON = "launched no Triton kernel in its checked calls: a Triton lane ranks only Triton"
NO_EXTENSION = (
    "called no compiled kernel of its own in its checked calls: a {language} lane ranks only "
    "candidates that run their own compiled extension"
)
_COMPILED = {"cuda": "CUDA", "hip": "HIP"}


def ruled(result: CandidateResult) -> CandidateResult:
    """`result`, FLAGGED where its language's rule refuses it; unchanged otherwise."""
    ref, v = result.candidate, result.verdict
    if ref.mode == "baseline" or not v.passed:
        return result
    if ref.language == "triton" and not v.triton_kernels:
        reason = NO_TRITON
    elif ref.language in _COMPILED and not v.extension_calls:
        reason = NO_EXTENSION.format(language=_COMPILED[ref.language])
    else:
        return result
    verdict = v.model_copy(update={"status": Status.FLAGGED, "reason": reason, "speedup": None})
    return result.model_copy(update={"verdict": verdict})
