"""The native op directory: an `op.toml` beside the kernel's sources.

name = "softmax"
kind = "reduction"            # gemm|attention|norm|reduction|elementwise|moe|scan|conv|other
language = "triton"
entry = "kernel.py:softmax"   # the function under test, called as entry(*inputs)
reference = "ref.py:softmax"  # optional; defaults to the entry itself
flops = "5*M*N"               # optional, for the physical-floor check

[[inputs]]
name = "x"
shape = ["M", "N"]
dtype = "float32"
init = "randn"                # randn | rand | randint | ones | zeros
scale = 1.0                   # optional: randn/rand * scale + offset; randint in [low, high)
offset = 0.0

[[workloads]]
name = "small"
dims = { M = 128, N = 512 }
draws = { x = { init = "rand", offset = 1.0 } }   # optional: this workload's distributions

[tolerance]                   # optional, norm-relative, per output dtype
float32 = 2e-5
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.program import check_entry, native_inputs, resolve_entry, shape_of
from kernel_bakeoff.scripts.safe_paths import refuse_links
from kernel_bakeoff.scripts.size_variants import Variant, targets
from kernel_bakeoff.scripts.spec import OpSpec, Workload

SPEC_FILE = "op.toml"


def detect(path: Path) -> bool:
    path = Path(path)
    return (path.is_dir() and (path / SPEC_FILE).is_file()) or path.name == SPEC_FILE


def load_spec(path: Path) -> tuple[OpSpec, Path]:
    path = Path(path)
    src_dir = path if path.is_dir() else path.parent
    spec_path = src_dir / SPEC_FILE
    refuse_links(src_dir)  # before anything in it is read
    try:
        raw = tomllib.loads(spec_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(str(spec_path), f"not valid TOML: {exc}") from None
    raw.setdefault("format", "native")
    try:
        spec = OpSpec.model_validate(raw)
    except ValidationError as err:
        raise BadInput.from_validation(str(spec_path), err) from None
    for field in ("entry", "reference"):
        value = getattr(spec, field)
        if value:
            check_entry(src_dir, value, f"{spec_path}: {field}")
    for wl in spec.workloads:
        for inp in spec.inputs:
            shape_of(inp, wl.dims, f"{spec_path}: workload {wl.name!r}")
    return spec, src_dir


def make_inputs(spec: OpSpec, src_dir: Path, workload, seed: int, device: str):
    return native_inputs(spec, workload, seed, device)


def load_callable(
    spec: OpSpec, src_dir: Path, entry: str, device: str, candidate: Path | None = None
):
    """The entry's function from the frozen sources, or the same-named one from a candidate."""
    src = Path(candidate) if candidate is not None else Path(src_dir)
    where = str(candidate) if candidate is not None else f"{src_dir}/{entry}"
    return resolve_entry(src, entry, where)


def _input_bytes(spec: OpSpec, dims: dict[str, int]) -> int:
    import torch

    total = 0
    for inp in spec.inputs:
        shape = shape_of(inp, dims, f"workload dims {dims}")
        total += getattr(torch, inp.dtype).itemsize * int(torch.Size(shape).numel())
    return total


def other_sizes(spec: OpSpec, src_dir: Path) -> list[Variant]:
    """The first workload with its first dimension (the first named one in the first input's
    shape) halved, doubled and made odd; sizes a listed workload already has are left out."""
    first = spec.workloads[0]
    named = [d for inp in spec.inputs[:1] for d in inp.shape if isinstance(d, str)]
    dim = next((d for d in named if d in first.dims), None)
    if dim is None:
        return []
    listed = [w.dims for w in spec.workloads]
    variants = []
    for _, n in targets(first.dims[dim]):
        dims = {**first.dims, dim: n}
        if dims in listed:
            continue
        # drawn as the workload it varies: a reference that accepts only those draws is right
        wl = Workload(name=f"{first.name}@{dim}={n}", dims=dims, draws=first.draws, timed=False)
        size = _input_bytes(spec, dims)
        variants.append(Variant(workload=wl, input_bytes=size, larger=n > first.dims[dim]))
    return variants
