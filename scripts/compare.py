"""Comparing a candidate's outputs with the reference: type, shape, dtype, NaN, norm-relative error.

Timed calls are checked through random projections: for w_j ~ N(0, 1) drawn from a seed, the
child reports w_j . out and the judge computes w_j . ref. For an honest output e = out - ref is
small, and w_j . e ~ N(0, |e|^2), so |w_j . (out - ref)| <= 6 * tol * |ref| holds unless the
error is far beyond the tolerance; a stale or memoised output (|e| ~ |ref|) fails it at once.
"""

from __future__ import annotations

import torch

from kernel_bakeoff.scripts.verdict import Status

PROJECTIONS = 4
PROJECTION_SIGMAS = 6.0

_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def as_outputs(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def structure(result) -> str:
    """What a call returned around its tensors: "a tensor", or "a tuple of N" (a list counts
    as a tuple). Outputs are compared one by one after `as_outputs`, so without this a tensor
    and a tuple holding it would compare equal."""
    if isinstance(result, (tuple, list)):
        return f"a tuple of {len(result)}"
    return "a tensor" if isinstance(result, torch.Tensor) else f"a {type(result).__name__}"


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def type_problem(value, device: str) -> str | None:
    """Why `value` is not acceptable as an output (a plain tensor on the op's device), or None."""
    if type(value) is not torch.Tensor:
        return f"is a {type(value).__module__}.{type(value).__qualname__}, not a plain torch.Tensor"
    if value.device.type != torch.device(device).type:
        return f"is on {value.device.type}, the op runs on {torch.device(device).type}"
    return None


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's raw bits (NaN compares equal to itself, -0.0 differs from 0.0)."""
    t = t.detach().contiguous()
    if t.dtype.is_floating_point or t.dtype.is_complex:
        return t.view(_SAME_SIZE_INT[t.element_size()])
    return t


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(bits(a), bits(b))


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64 over the reference's finite elements (absolute if 0)."""
    out64, ref64 = out.detach().to(torch.float64), ref.detach().to(torch.float64)
    finite = torch.isfinite(ref64)
    if not bool(finite.all()):
        out64, ref64 = out64[finite], ref64[finite]
    denom = torch.linalg.vector_norm(ref64).item()
    num = torch.linalg.vector_norm(out64 - ref64).item()
    return num / denom if denom > 0 else num


def _nonfinite_problem(out: torch.Tensor, ref: torch.Tensor) -> str | None:
    if not (out.dtype.is_floating_point or out.dtype.is_complex):
        return None
    bad_out, bad_ref = ~torch.isfinite(out), ~torch.isfinite(ref)
    extra = int((bad_out & ~bad_ref).sum())
    if extra:
        return f"has {extra} NaN/Inf elements where the reference is finite"
    if bool(bad_ref.any()):
        o, r = out[bad_ref], ref[bad_ref]
        if not (torch.equal(o.isnan(), r.isnan()) and torch.equal(o[~o.isnan()], r[~r.isnan()])):
            return "differs from the reference where the reference is NaN/Inf"
    return None


def compare(
    outs: list, refs: list, tolerance_for
) -> tuple[Status | None, str | None, float | None]:
    """(failing status or None, reason, error) for one call's outputs. The error is the largest
    norm-relative error over the outputs, or, on a failure, that of the failing output (None
    when the failure leaves it unmeasured: wrong count, shape, dtype, NaN)."""
    if len(outs) != len(refs):
        return Status.INCORRECT_SHAPE, f"returned {len(outs)} outputs, expected {len(refs)}", None
    worst = 0.0
    for i, (out, ref) in enumerate(zip(outs, refs)):
        if tuple(out.shape) != tuple(ref.shape):
            shapes = f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
            return Status.INCORRECT_SHAPE, f"output {i} has {shapes}", None
        if out.dtype != ref.dtype:
            dtypes = f"dtype {dtype_name(out.dtype)}, expected {dtype_name(ref.dtype)}"
            return Status.INCORRECT_DTYPE, f"output {i} has {dtypes}", None
        out = out.to(ref.device)
        problem = _nonfinite_problem(out, ref)
        if problem:
            return Status.INCORRECT_NUMERICAL, f"output {i} {problem}", None
        err = rel_error(out, ref)
        tol = tolerance_for(dtype_name(ref.dtype))
        if not err <= tol:
            return (
                Status.INCORRECT_NUMERICAL,
                f"output {i}: error {err:.3g} (norm-relative) exceeds the {dtype_name(ref.dtype)} "
                f"tolerance {tol:.3g}",
                err,
            )
        worst = max(worst, err)
    return None, None, worst


class Projector:
    """w_j . out for PROJECTIONS vectors w_j ~ N(0, 1) drawn from `seed`, in float64.

    The vectors are drawn block by block from per-block seeds, so the child and the judge draw
    the same ones, and memory stays bounded: blocks are kept up to CACHE_BYTES, redrawn beyond."""

    BLOCK = 1 << 22  # elements per block: 4 x 4M float64 = 128 MiB
    CACHE_BYTES = 256 << 20

    def __init__(self, seed: int, device: str):
        self.seed = int(seed)
        self.device = device
        self._gen = torch.Generator(device=device)
        self._kept: dict[int, torch.Tensor] = {}
        self._kept_bytes = 0

    def _block(self, start: int, size: int) -> torch.Tensor:
        if start in self._kept:
            return self._kept[start]
        self._gen.manual_seed((self.seed + start) % (1 << 63))
        # Drawn in float32 and widened: a float64 draw took about 3x as long on a CPU, in the
        # candidate's process, the baseline's and the judge (docs/testing.md). The vectors need
        # only be unknown to the candidate and of unit variance; the products are still summed
        # in float64.
        w = torch.randn(
            PROJECTIONS, size, generator=self._gen, device=self.device, dtype=torch.float32
        ).to(torch.float64)
        if self._kept_bytes + w.numel() * 8 <= self.CACHE_BYTES:
            self._kept[start] = w
            self._kept_bytes += w.numel() * 8
        return w

    def __call__(self, out: torch.Tensor) -> list[float]:
        flat = out.detach().reshape(-1)
        total = torch.zeros(PROJECTIONS, dtype=torch.float64, device=self.device)
        for start in range(0, flat.numel(), self.BLOCK):
            part = flat[start : start + self.BLOCK].to(torch.float64)
            total += self._block(start, part.numel()) @ part
        return total.tolist()


def projection_problem(got: list[float], ref: torch.Tensor, project: Projector, tol: float):
    """Why reported projections `got` cannot come from an output within `tol` of `ref`, or None."""
    want = project(ref)
    if not all(v == v and abs(v) != float("inf") for v in want):
        return None  # a reference with NaN/Inf: the full checks on the trial calls decide
    norm = torch.linalg.vector_norm(ref.detach().to(torch.float64)).item()
    bound = PROJECTION_SIGMAS * tol * norm + 1e-9 * norm
    for g, r in zip(got, want):
        if not abs(g - r) <= bound:
            return f"projection {g:.6g} vs reference {r:.6g} (bound {bound:.3g})"
    return None
