"""A KernelBench problem: one .py file with `Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`.

The frozen baseline is `Model(*get_init_inputs())`, built under a fixed seed; it is also its own
reference. A candidate is a file defining `ModelNew`, built with the same constructor arguments
under the same seed (so parameters match) and called as `module(*inputs)`. Inputs are
`get_inputs()` after `torch.manual_seed(seed)`, moved to the device.

Other sizes (scripts/sizes.py) change the leading dimension n of the first tensor input. Where a
module-level int that `get_inputs` reads equals n and setting it changes that dimension (KernelBench's
`batch_size`, `M`, `N`, ...), it is set for the call: the problem's own code draws the inputs, so
whatever it builds (targets within a class count, masks) stays consistent, and every dimension that
name sets changes with it. Otherwise, every tensor whose leading dimension is n is cut to the new
size, or drawn again and concatenated for a larger one: rows drawn as the problem draws them.
"""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path

import torch

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.formats.staging import scratch_dir
from kernel_bakeoff.scripts.program import import_file, top_level_names
from kernel_bakeoff.scripts.safe_paths import safe_name
from kernel_bakeoff.scripts.size_variants import Variant, targets
from kernel_bakeoff.scripts.spec import DTYPES, InputSpec, OpKind, OpSpec, Workload

REQUIRED = ("Model", "get_inputs", "get_init_inputs")
CANDIDATE_CLASS = "ModelNew"
INIT_SEED = 42  # the seed KernelBench builds both models under

# File-name and source hints, in priority order: a conv followed by a ReLU is a conv.
_KIND_HINTS = (
    (OpKind.conv, ("conv",)),
    (OpKind.attention, ("attention", "attn")),
    (OpKind.gemm, ("matmul", "gemm", "matrix_multiplication", "linear", "bmm", "einsum")),
    (OpKind.norm, ("norm",)),
    (OpKind.scan, ("cumsum", "cumprod", "scan")),
    (OpKind.reduction, ("softmax", "reduction", "argmax", "argmin", "sum", "mean", "loss")),
    (
        OpKind.elementwise,
        ("relu", "gelu", "sigmoid", "tanh", "swish", "silu", "elu", "softplus", "hardtanh"),
    ),
)


def detect(path: Path) -> bool:
    """A .py file that defines any of Model / get_inputs / get_init_inputs (or does not parse)."""
    path = Path(path)
    if not (path.is_file() and path.suffix == ".py"):
        return False
    try:
        names = top_level_names(path.read_text())
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return True  # no other format reads a bare .py: load_spec says what is wrong with it
    return names is None or bool(names & set(REQUIRED))


def guess_kind(path: Path, source: str) -> OpKind:
    for text in (path.stem.lower(), source.lower()):
        for kind, words in _KIND_HINTS:
            if any(w in text for w in words):
                return kind
    return OpKind.other


def _describe(value) -> dict:
    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch.")}
    simple = (int, float, bool, str, type(None))
    if isinstance(value, simple):
        return {"value": value}
    if isinstance(value, (list, tuple)) and all(isinstance(v, simple) for v in value):
        return {"value": list(value)}
    return {"type": type(value).__name__}


def _problem_inputs(module, where: str) -> list:
    """get_inputs() on the meta device when it can (shapes without memory), else for real."""
    try:
        with torch.device("meta"):
            return list(module.get_inputs())
    except Exception:
        pass
    try:
        torch.manual_seed(0)
        return list(module.get_inputs())
    except Exception as exc:
        raise BadInput(where, f"get_inputs() raised {type(exc).__name__}: {exc}") from None


def load_spec(path: Path) -> tuple[OpSpec, Path]:
    path = Path(path)
    where = str(path)
    source = path.read_text()
    try:
        names = top_level_names(source)
    except SyntaxError as exc:
        raise BadInput(f"{path}:{exc.lineno}", f"not valid Python: {exc.msg}") from None
    module = import_file(path, where) if names is None else None
    missing = [n for n in REQUIRED if n not in (names or vars(module))]
    if missing:
        raise BadInput(
            where, f"a KernelBench problem defines {', '.join(REQUIRED)}; this file lacks {missing}"
        )
    module = module or import_file(path, where)
    inputs = _problem_inputs(module, where)
    init = _init_inputs(module, where)
    described = [_describe(v) for v in inputs]
    tensor_specs = [
        InputSpec(name=f"arg{i}", shape=d["shape"], dtype=d["dtype"])
        for i, d in enumerate(described)
        if "shape" in d and d["dtype"] in DTYPES
    ]
    spec = OpSpec(
        name=safe_name(path.stem),  # it names directories
        kind=guess_kind(path, source),
        language="torch",
        format="kernelbench",
        entry=f"{path.name}:Model",
        inputs=tensor_specs,
        workloads=[Workload(name="default", extra={"inputs": described})],
        extra={"init_inputs": [_describe(v) for v in init]},
    )
    staged = scratch_dir("kernelbench")
    shutil.copy2(path, staged / path.name)
    return spec, staged


def _init_inputs(module, where: str) -> list:
    try:
        torch.manual_seed(INIT_SEED)
        return list(module.get_init_inputs())
    except Exception as exc:
        raise BadInput(where, f"get_init_inputs() raised {type(exc).__name__}: {exc}") from None


def _problem_file(spec: OpSpec, src_dir: Path) -> Path:
    return Path(src_dir) / spec.entry.partition(":")[0]


_imported: dict[tuple[str, int], object] = {}


def _import_problem(path: Path, where: str):
    """The problem module, imported once per file version (inputs are made many times)."""
    key = (str(path.resolve()), path.stat().st_mtime_ns if path.exists() else 0)
    if key not in _imported:
        _imported[key] = import_file(path, where)
    return _imported[key]


def make_inputs(spec: OpSpec, src_dir: Path, workload, seed: int, device: str) -> list:
    module = _import_problem(_problem_file(spec, src_dir), f"{spec.name}: get_inputs")
    torch.manual_seed(int(seed))
    # Made on the device: `torch.randn(4096, 8192)` on the host takes the CPU ~0.1 s a tensor,
    # and a GPU left idle that long between timed samples lets its clocks fall (an idle H200's
    # are several times slower: docs/studies/h200_figures.md): the suspected cause of large
    # problems timed slower than they run.
    with torch.device(device):
        inputs = _resized_inputs(module, workload.extra.get("resize"))
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in inputs]


def _resized_inputs(module, resize: dict | None) -> list:
    if not resize:
        return list(module.get_inputs())
    if "global" in resize:
        name, was = resize["global"], getattr(module, resize["global"])
        setattr(module, name, resize["value"])
        try:
            return list(module.get_inputs())
        finally:
            setattr(module, name, was)
    lead, n = resize["lead"], resize["dim0"]
    draws = [list(module.get_inputs()) for _ in range(-(-n // lead))]
    out = []
    for i, value in enumerate(draws[0]):
        if _leads_with(value, lead):
            whole = torch.cat([d[i] for d in draws]) if len(draws) > 1 else value
            value = whole[:n].clone()
        out.append(value)
    return out


def _leads_with(value, lead: int) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == lead


def _global_names(code) -> list[str]:
    """Names `code` (and the functions and comprehensions inside it) may read as globals."""
    names = list(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names += _global_names(const)
    return list(dict.fromkeys(names))


def _meta_inputs(module, resize: dict | None) -> list | None:
    try:
        with torch.device("meta"):
            return _resized_inputs(module, resize)
    except Exception:
        return None


def _size_global(module, lead: int) -> str | None:
    """The module-level int that sets the first tensor input's leading dimension, if one does."""
    code = getattr(module.get_inputs, "__code__", None)
    for name in _global_names(code) if code is not None else []:
        value = vars(module).get(name)
        if type(value) is not int or value != lead:
            continue
        inputs = _meta_inputs(module, {"global": name, "value": lead + 1})
        first = next((v for v in inputs or [] if isinstance(v, torch.Tensor) and v.dim()), None)
        if first is not None and first.shape[0] == lead + 1:
            return name
    return None


def _bytes(described: list[dict]) -> int:
    total = 0
    for d in described:
        if "shape" in d and d["dtype"] in DTYPES:
            size = getattr(torch, d["dtype"]).itemsize
            total += size * int(torch.Size(d["shape"]).numel())
    return total


def other_sizes(spec: OpSpec, src_dir: Path) -> list[Variant]:
    """The leading dimension n of the first tensor input halved, doubled and made odd."""
    module = _import_problem(_problem_file(spec, src_dir), f"{spec.name}: get_inputs")
    listed = spec.workloads[0].extra.get("inputs", [])
    lead = next((d["shape"][0] for d in listed if d.get("shape")), None)
    if lead is None:
        return []
    name = _size_global(module, lead)
    variants = []
    for _, n in targets(lead):
        if name is not None:
            resize, label = {"global": name, "value": n}, f"{name}={n}"
        else:
            resize, label = {"dim0": n, "lead": lead}, f"dim0={n}"
        inputs = _meta_inputs(module, resize)
        if inputs is not None:
            described = [_describe(v) for v in inputs]
        else:  # get_inputs does not run on the meta device: scale the listed shapes
            described = [
                {**d, "shape": [n, *d["shape"][1:]]} if (d.get("shape") or [0])[0] == lead else d
                for d in listed
            ]
        wl = Workload(
            name=f"{spec.workloads[0].name}@{label}",
            timed=False,
            extra={"inputs": described, "resize": resize},
        )
        variants.append(Variant(workload=wl, input_bytes=_bytes(described), larger=n > lead))
    return variants


class ModuleCall:
    """Calls an nn.Module without recording autograd history; `.module` is the module."""

    def __init__(self, module: torch.nn.Module):
        self.module = module

    def __call__(self, *inputs):
        with torch.no_grad():
            return self.module(*inputs)


def constructor_mismatch(cls, init: list) -> str | None:
    """One line naming why `cls(*init)` cannot bind (the problem's `get_init_inputs()` against
    the candidate's constructor), or None when it can or its signature cannot be read."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*init)
    except TypeError as exc:
        given = ", ".join(_short_repr(v) for v in init) or "nothing"
        return (
            f"{cls.__name__}{signature} does not match the problem's constructor arguments: "
            f"get_init_inputs() gives ({given}): {exc}"
        )
    return None


def _short_repr(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load_callable(
    spec: OpSpec, src_dir: Path, entry: str, device: str, candidate: Path | None = None
):
    """`Model` from the frozen problem, or `ModelNew` from a candidate file, with equal weights."""
    problem_path = _problem_file(spec, src_dir)
    problem = _import_problem(problem_path, f"{src_dir}/{entry}")
    init = _init_inputs(problem, str(problem_path))
    if candidate is None:
        cls, where = getattr(problem, entry.partition(":")[2]), f"{src_dir}/{entry}"
    else:
        candidate = Path(candidate)
        path = candidate / problem_path.name if candidate.is_dir() else candidate
        where = str(path)
        module = import_file(path, where)
        cls = getattr(module, CANDIDATE_CLASS, None)
        if cls is None:
            raise BadInput(where, f"a KernelBench candidate defines {CANDIDATE_CLASS!r}")
        mismatch = constructor_mismatch(cls, init)
        if mismatch:
            raise BadInput(where, mismatch)
    try:
        torch.manual_seed(INIT_SEED)
        model = cls(*init)
    except Exception as exc:
        raise BadInput(
            where, f"{cls.__name__}(*get_init_inputs()) raised {type(exc).__name__}: {exc}"
        ) from exc
    return ModuleCall(model.to(device))
