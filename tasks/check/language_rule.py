"""A candidate of language L runs L: the lane rule applied to every check's verdict.

A Triton lane's candidate (an author's, an optimizer's, a search's, Discover's) must launch at
least one Triton kernel in its checked calls; one that launched none (a "Triton" file that
returns the reference's or torch's answer) is FLAGGED with the reason "launched no Triton
kernel", whoever wrote it. The harness reports which kernels ran (`WorkloadVerdict.
triton_kernels`, scripts/launches.py); this side decides, so the verdict kept in the run's
`checked/` record stays the harness's own and a candidate met by two lanes is judged by each
lane's language. The frozen input checked as a candidate is the denominator, never refused.
Two more checks for Triton, since that list is reported by the candidate's own process: every
name in it must be a `@triton.jit` function of the candidate's own files, read here by parsing
them (`tasks.check.triton_sources`: a library's or the reference's kernel, or a name never written, is
not its Triton); and the call's torch work beside its Triton launches (`WorkloadVerdict.
torch_work`, elements read by aten compute ops) must stay under TORCH_SHARE of the call's input
elements, so a trivial or copying Triton kernel beside a torch implementation is refused.
A CUDA or HIP lane's candidate must call its own compiled code in its checked calls: a function
of a module load_inline or load built for it, or a hip-python launch (`WorkloadVerdict.
extension_calls`); one that called none is FLAGGED "called no compiled kernel of its own".
"""

from __future__ import annotations

from kernel_bakeoff.scripts.verdict import Status, Verdict
from kernel_bakeoff.tasks.check.triton_sources import own_kernels
from kernel_bakeoff.tasks.models.plan import CandidateResult

NO_TRITON = "launched no Triton kernel in its checked calls: a Triton lane ranks only Triton"
NO_EXTENSION = (
    "called no compiled kernel of its own in its checked calls: a {language} lane ranks only "
    "candidates that run their own compiled extension"
)
NOT_OWN = (
    "launched {names}, which its own files define no @triton.jit function of: a Triton lane "
    "ranks only the candidate's own Triton"
)
TORCH_WORK = (
    "did the op's work in torch beside its Triton kernels ({ops} read {share:.0%} of the call's "
    "input elements in workload {workload!r}; a Triton lane allows under {limit:.0%})"
)
# Torch compute beside the Triton launches may read less than half the call's input elements:
# a reduction of per-row partial results or a bias epilogue is honest; the op itself, or a
# copy of torch's answer through a trivial kernel, reads all of them (a softmax in torch: 100%).
TORCH_SHARE = 0.5
# On a device, the kernels named after its Triton functions must run at least half of the
# timed calls' device time (the profiler's trace, not the candidate's Python).
DEVICE_SHARE = (
    "its Triton kernels ran {share:.0%} of its timed calls' device time in workload "
    "{workload!r} ({others} ran the rest); a Triton lane asks for at least {need:.0%}"
)
_COMPILED = {"cuda": "CUDA", "hip": "HIP"}


def _triton_problem(v: Verdict, path: str) -> str | None:
    if not v.triton_kernels:
        return NO_TRITON
    strangers = sorted(set(v.triton_kernels) - own_kernels(path))
    if strangers:
        return NOT_OWN.format(names=", ".join(strangers[:5]))
    for w in v.workloads:
        work = w.torch_work
        if work is not None and work.share >= TORCH_SHARE:
            top = sorted(work.torch_read.items(), key=lambda kv: -kv[1])[:3]
            ops = ", ".join(f"aten.{op}" for op, _ in top)
            return TORCH_WORK.format(
                ops=ops, share=work.share, workload=w.workload, limit=TORCH_SHARE
            )
        share = device_share(w, set(v.triton_kernels))
        if share is not None and share < 1 - TORCH_SHARE:
            rest = sorted((w.device_us or {}).items(), key=lambda kv: -kv[1])
            others = ", ".join(n for n, _ in rest if n not in v.triton_kernels)[:200]
            need = 1 - TORCH_SHARE
            return DEVICE_SHARE.format(share=share, workload=w.workload, others=others, need=need)
    return None


def device_share(w, kernels: set[str]) -> float | None:
    """The share of the timed calls' device time in kernels named after `kernels`; None where
    there is no device trace or it names none of them (then the names are not comparable: an
    honest candidate is not refused on a trace whose names differ from its functions')."""
    times = w.device_us or {}
    own = sum(us for name, us in times.items() if name in kernels)
    total = sum(times.values())
    return own / total if own and total > 0 else None


def ruled(result: CandidateResult) -> CandidateResult:
    """`result`, FLAGGED where its language's rule refuses it; unchanged otherwise."""
    ref, v = result.candidate, result.verdict
    if ref.mode == "baseline" or not v.passed:
        return result
    if ref.language == "triton":
        reason = _triton_problem(v, ref.path)
        if reason is None:
            return result
    elif ref.language in _COMPILED and not v.extension_calls:
        reason = NO_EXTENSION.format(language=_COMPILED[ref.language])
    else:
        return result
    verdict = v.model_copy(update={"status": Status.FLAGGED, "reason": reason, "speedup": None})
    return result.model_copy(update={"verdict": verdict})
