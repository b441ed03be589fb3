"""The part of `scripts.candidate_fit` that runs in the box (`scripts.untrusted`'s step
"candidate_fit"): it imports the problem and the candidate, untrusted code both."""

from __future__ import annotations

from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput


def unfit(candidate: Path, problem: Path, why: str) -> BadInput:
    return BadInput(str(candidate), f"not a candidate for {problem}: {why}")


def fit_step(problem: str, candidate: str, shown_problem: str, shown_candidate: str) -> dict:
    """In the box: import the problem and the candidate, and bind `ModelNew`'s constructor to
    the problem's `get_init_inputs()` (nothing is built or run)."""
    # torch, which both bring: only this boxed step needs them, not scripts.untrusted
    from kernel_bakeoff.scripts.formats import kernelbench
    from kernel_bakeoff.scripts.program import import_file

    where, shown = Path(shown_candidate), Path(shown_problem)
    init = kernelbench._init_inputs(import_file(Path(problem), shown_problem), shown_problem)
    try:
        module = import_file(Path(candidate), shown_candidate)
    except BadInput:
        return {}  # a candidate that fails as it imports: the check's verdict, with its output
    cls = getattr(module, kernelbench.CANDIDATE_CLASS, None)
    if not isinstance(cls, type):
        raise unfit(where, shown, "defines no class ModelNew (a KernelBench candidate's model)")
    mismatch = kernelbench.constructor_mismatch(cls, init)
    if mismatch:
        raise unfit(where, shown, mismatch)
    return {}
