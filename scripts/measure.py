"""Smoke-test and time the frozen baseline in-process (freeze time only; trusted code)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import torch

from scripts.errors import BadInput
from scripts.formats import module_for
from scripts.spec import OpSpec


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    out64, ref64 = out.detach().double().cpu(), ref.detach().double().cpu()
    denom = ref64.norm().item()
    num = (out64 - ref64).norm().item()
    return num / denom if denom > 0 else num


def _as_list(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def smoke(spec: OpSpec, src_dir: Path, device: str, seed: int = 1234) -> dict:
    """Run entry and reference on every workload; raise BadInput with the reason on failure."""
    fmt = module_for(spec.format)
    entry = fmt.load_callable(spec, src_dir, spec.entry, device)
    ref = (
        entry
        if spec.reference is None
        else fmt.load_callable(spec, src_dir, spec.reference, device)
    )
    results = {}
    for wl in spec.workloads:
        where = f"workload {wl.name!r}"
        try:
            inputs = fmt.make_inputs(spec, src_dir, wl, seed, device)
            expected = _as_list(ref(*inputs))
            got = _as_list(entry(*fmt.make_inputs(spec, src_dir, wl, seed, device)))
        except BadInput:
            raise
        except Exception as exc:
            raise BadInput(where, f"the kernel raised {type(exc).__name__}: {exc}") from exc
        errors = []
        for i, (o, r) in enumerate(zip(got, expected, strict=False)):
            if tuple(o.shape) != tuple(r.shape) or o.dtype != r.dtype:
                raise BadInput(
                    where,
                    f"output {i}: {tuple(o.shape)} {o.dtype} vs reference {tuple(r.shape)} {r.dtype}",
                )
            err = rel_error(o, r)
            if not (err <= spec.tolerance_for(str(r.dtype).removeprefix("torch."))):
                raise BadInput(
                    where, f"output {i}: baseline differs from its reference by {err:.3g}"
                )
            errors.append(err)
        results[wl.name] = {"status": "PASSED", "max_rel_error": max(errors, default=0.0)}
    return results


def time_workloads(
    spec: OpSpec, src_dir: Path, device: str, samples: int = 20, warmup: int = 3
) -> dict:
    fmt = module_for(spec.format)
    fn = fmt.load_callable(spec, src_dir, spec.entry, device)
    out = {}
    for wl in spec.workloads:
        inputs = fmt.make_inputs(spec, src_dir, wl, 99, device)
        for _ in range(warmup):
            fn(*inputs)
        times = []
        for _ in range(samples):
            if device != "cpu":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(*inputs)
            if device != "cpu":
                torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        out[wl.name] = {"median_ms": statistics.median(times), "samples_ms": times}
    return out
