"""Discover's table: every candidate it measured, where it came from (library and version,
template and configuration, compile mode) and how far its time is from the roofline floor, with
what the trace matched in the reference (or why nothing was)."""

from __future__ import annotations

from pydantic import BaseModel

from kernel_bakeoff.tasks.check.roofline import WorkloadFloor
from kernel_bakeoff.tasks.models.plan import DiscoverPlan


class DiscoverRow(BaseModel):
    name: str
    origin: str
    status: str
    speedup: float | None
    median_ms: dict[str, float]
    over_floor: dict[str, float]  # median / max(memory floor, compute floor): 1.0 is the limit


def floor_ms(f: WorkloadFloor) -> float | None:
    best = max(f.memory_floor_ms or 0.0, f.compute_floor_ms or 0.0)
    return best or None


def rows(plan: DiscoverPlan, floors: list[WorkloadFloor]) -> list[DiscoverRow]:
    by_name = {f.workload: floor_ms(f) for f in floors}
    out = []
    measured = plan.measured + ([plan.env_candidate] if plan.env_candidate else [])
    for r in measured:
        ms = {
            w.workload: w.timing.median_ms
            for w in r.verdict.workloads
            if w.timing and w.timing.median_ms > 0
        }
        over = {k: v / by_name[k] for k, v in ms.items() if by_name.get(k)}
        out.append(
            DiscoverRow(
                name=r.candidate.name,
                origin=r.candidate.origin or r.candidate.name,
                status=r.verdict.status.value,
                speedup=r.verdict.speedup,
                median_ms=ms,
                over_floor=over,
            )
        )
    return out


def matched_line(plan: DiscoverPlan) -> str:
    """What the model-free trace found in the reference, in one line."""
    if plan.matches:
        found = ", ".join(
            f"{m['label']} ({m['how']}, {m['dtype']}, {list(m['shapes'].values())[0]})"
            for m in plan.matches
        )
        return f"matched in the traced reference: {found}"
    why = "; ".join(plan.match_notes) or "the reference was not traced"
    return f"no match in the traced reference: {why}"
