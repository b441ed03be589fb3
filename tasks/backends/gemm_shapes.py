"""The GEMMs an op makes, read off its plain-torch implementation run on meta tensors.

Running it imports the user's kernel, so `record` runs `record_here` in the box
(scripts/untrusted.py: the task's sources read-only, the answer JSON, validated here)."""

from __future__ import annotations

from pathlib import Path

import torch

from kernel_bakeoff.scripts import untrusted
from kernel_bakeoff.scripts.formats import module_for
from kernel_bakeoff.scripts.program import shape_of
from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.backends.aiter_route import RecordGemms
from kernel_bakeoff.tasks.backends.base import BuildContext

COLUMNS = {"M": int, "N": int, "K": int, "bias": bool, "dtype": str, "outdtype": str}
COLUMNS |= {"scaleAB": bool, "bpreshuffle": bool}


def _meta_inputs(spec: OpSpec, src_dir: Path, workload) -> list:
    if spec.format == "native":
        where = f"workload {workload.name!r}"
        return [
            torch.empty(
                shape_of(i, workload.dims, where), dtype=getattr(torch, i.dtype), device="meta"
            )
            for i in spec.inputs
        ]
    inputs = module_for(spec.format).make_inputs(spec, src_dir, workload, 0, "cpu")
    return [v.to("meta") if isinstance(v, torch.Tensor) else v for v in inputs]


def record_here(spec: OpSpec, src_dir: Path, entry: str) -> list[dict]:
    """In this process (the box's): distinct GEMM rows over every timed frozen workload."""
    fmt = module_for(spec.format)
    fn = fmt.load_callable(spec, src_dir, entry, "meta")
    rows: list[dict] = []
    for wl in spec.timed_workloads:
        recorder = RecordGemms()
        with recorder, torch.no_grad():
            fn(*_meta_inputs(spec, src_dir, wl))
        rows += [r for r in recorder.shapes if r not in rows]
    return rows


def record_step(spec: dict, src_dir: str, entry: str) -> list[dict]:
    """What the box runs for `record`."""
    return record_here(OpSpec.model_validate(spec), Path(src_dir), entry)


def record(ctx: BuildContext, entry: str) -> list[dict]:
    """Distinct GEMM rows (aiter's untuned-CSV columns) over every timed frozen workload, read
    in the box; a row that is not aiter's columns and types is refused."""

    rows = untrusted.call(
        f"{__name__}:record_step",
        f"{ctx.baseline_src}/{entry}",
        read=[ctx.baseline_src],
        spec=ctx.spec.model_dump(mode="json"),
        src_dir=str(ctx.baseline_src),
        entry=entry,
    )
    if not isinstance(rows, list) or not all(_valid(r) for r in rows):
        raise RuntimeError(f"recording the GEMMs of {entry} answered rows that are not aiter's")
    return rows


def _valid(row) -> bool:
    return (
        isinstance(row, dict)
        and set(row) == set(COLUMNS)
        and all(type(row[k]) is t for k, t in COLUMNS.items())
    )
