"""Does the oracle discriminate? Run at freeze, on the reference alone, in the sandbox.

Comparing a candidate's outputs with the reference cannot catch an oracle that every answer
passes: a bf16 cosine-similarity loss over random rows is 1.0 at every input draw (its spread is
far below bf16's resolution), so a candidate returning the constant 1.0 passed, 49x faster. The
freeze can: it runs the reference on several input draws (fresh seeds; where inputs are floating
point, also scaled and shifted) and measures how far the outputs move, in tolerances. Where a
constant, zeros, or an input passed through would be within tolerance at every draw, it says so
in one line, records it in spec.json (`degenerate`), and every report repeats it. The fix is the
user's: input distributions in the op spec (scripts/spec.py InputSpec and Workload.draws), other
sizes, or a tighter tolerance.

An oracle whose reference returns no finite value at all checks nothing: refused here.
"""

from __future__ import annotations

from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.spec import OpSpec

SEEDS = (101, 202, 303, 404)  # draws the checks' fresh seeds stand for
SCALE, SHIFT = 8.0, 1.0  # the other draws: floating inputs scaled, and shifted


def _moved(a, b, tol: float) -> float:
    """How far apart two outputs are, in tolerances (inf for a tolerance of 0 and any change)."""
    # torch, through scripts.compare: imported as a probe runs, like torch here
    from kernel_bakeoff.scripts import compare

    if a.shape != b.shape or a.dtype != b.dtype:
        return float("inf")
    err = compare.rel_error(a, b)
    return err / tol if tol > 0 else (0.0 if err == 0 else float("inf"))


def _passes(fake, ref, tol: float) -> bool:
    # torch, through scripts.compare: imported as a probe runs, like torch here
    from kernel_bakeoff.scripts import compare

    if fake.shape != ref.shape:
        return False
    status, _, _ = compare.compare([fake], [ref], lambda _: tol)
    return status is None


def _transformed(inputs: list, how: str) -> list:
    import torch

    def one(v):
        if not (isinstance(v, torch.Tensor) and v.dtype.is_floating_point):
            return v
        return v * SCALE if how == "scaled" else v + SHIFT

    return [one(v) for v in inputs]


def probe_workload(reference, spec: OpSpec, wl) -> dict:
    """For one workload: {"moved": {family: tolerances}, "passes": [what passes], ...}."""
    import torch

    # torch, through scripts.compare: imported as a probe runs, like torch here
    from kernel_bakeoff.scripts import compare

    draws = [reference.outputs(wl, seed) for seed in SEEDS]
    for i, ref in enumerate(draws[0][1]):
        if ref.dtype.is_floating_point and ref.numel() and not bool(torch.isfinite(ref).any()):
            raise BadInput(
                f"reference {spec.reference_entry}, workload {wl.name!r}",
                f"output {i} holds no finite value (all NaN/Inf): an oracle with no finite "
                "output checks nothing",
            )
    tols = [spec.tolerance_for(compare.dtype_name(r.dtype)) for r in draws[0][1]]
    moved = {"seeds": 0.0}
    first = draws[0][1]
    for _, refs in draws[1:]:
        for i, (a, b) in enumerate(zip(first, refs)):
            moved["seeds"] = max(moved["seeds"], _moved(a, b, tols[i]))
    has_float = any(isinstance(v, torch.Tensor) and v.dtype.is_floating_point for v in draws[0][0])
    if has_float:  # do other draws of the same inputs move it more? (a hint for the fix)
        for how in ("scaled", "shifted"):
            outs = []
            for seed in SEEDS[:2]:
                inputs = _transformed(reference.inputs(wl, seed), how)
                try:
                    outs.append(compare.as_outputs(reference.fn(*inputs)))
                except Exception:  # the reference may refuse other values: no hint from them
                    break
            if len(outs) == 2 and len(outs[0]) == len(first) == len(outs[1]):
                moved[how] = max(_moved(a, b, tols[i]) for i, (a, b) in enumerate(zip(*outs)))
    passes = []
    if all(
        all(_passes(torch.zeros_like(r), r, t) for r, t in zip(refs, tols)) for _, refs in draws
    ):
        passes.append("zeros")
    elif moved["seeds"] <= 1.0:
        passes.append("a constant")
    if len(first) == 1:
        for j, inp in enumerate(spec.inputs):
            if all(
                j < len(inputs)
                and isinstance(inputs[j], torch.Tensor)
                and _passes(inputs[j], refs[0], tols[0])
                for inputs, refs in draws
            ):
                passes.append(f"input {inp.name!r} returned as it is")
                break
    return {"moved": moved, "passes": passes}


def degenerate(spec: OpSpec, found: dict[str, dict]) -> dict | None:
    """The `degenerate` record of spec.json from each timed workload's probe, or None."""
    bad = {name: r for name, r in found.items() if r["passes"]}
    if not bad:
        return None
    name, r = next(iter(bad.items()))
    what = " or ".join(dict.fromkeys(p for r in bad.values() for p in r["passes"]))
    moved = r["moved"]
    better = [
        f"{how} draws move it {moved[how]:.3g}"
        for how in ("scaled", "shifted")
        if moved.get(how, 0.0) > 1.0
    ]
    fix = (
        f"; {' and '.join(better)} tolerances: set scale/offset of the inputs in the op spec"
        if better
        else "; give the inputs other distributions in the op spec (init, scale, offset, "
        "low/high, a workload's draws), other sizes, or a tighter tolerance"
    )
    line = (
        f"the oracle does not discriminate: {what} passes the check at {', '.join(bad)} "
        f"(at {name} its outputs move {moved['seeds']:.3g} tolerances across {len(SEEDS)} "
        f"input draws){fix}"
    )
    return {
        "message": line,
        "workloads": {n: {"passes": r["passes"], "moved": r["moved"]} for n, r in found.items()},
    }


def probe(spec: OpSpec, src_dir: Path, device: str) -> dict | None:
    """Probe every timed workload of `spec` with its reference; the `degenerate` record or None.
    BadInput where the reference returns no finite value."""
    import torch

    # torch, through scripts.reference: imported as a probe runs, like torch here
    from kernel_bakeoff.scripts.reference import Reference

    reference = Reference(spec, Path(src_dir), device)
    with torch.no_grad():
        found = {wl.name: probe_workload(reference, spec, wl) for wl in spec.timed_workloads}
    return degenerate(spec, found)
