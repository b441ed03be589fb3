"""The GEMMs an op makes, read off its plain-torch implementation run on meta tensors."""

from __future__ import annotations

import torch

from scripts.formats import module_for
from scripts.program import shape_of
from tasks.backends.aiter_route import RecordGemms
from tasks.backends.base import BuildContext


def _meta_inputs(ctx: BuildContext, workload) -> list:
    spec = ctx.spec
    if spec.format == "native":
        where = f"workload {workload.name!r}"
        return [
            torch.empty(
                shape_of(i, workload.dims, where), dtype=getattr(torch, i.dtype), device="meta"
            )
            for i in spec.inputs
        ]
    inputs = module_for(spec.format).make_inputs(spec, ctx.baseline_src, workload, 0, "cpu")
    return [v.to("meta") if isinstance(v, torch.Tensor) else v for v in inputs]


def record(ctx: BuildContext, entry: str) -> list[dict]:
    """Distinct GEMM rows (aiter's untuned-CSV columns) over every timed frozen workload."""
    fmt = module_for(ctx.spec.format)
    fn = fmt.load_callable(ctx.spec, ctx.baseline_src, entry, "meta")
    rows: list[dict] = []
    for wl in ctx.spec.timed_workloads:
        recorder = RecordGemms()
        with recorder, torch.no_grad():
            fn(*_meta_inputs(ctx, wl))
        rows += [r for r in recorder.shapes if r not in rows]
    return rows
