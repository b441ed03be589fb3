"""Turning an op spec into runnable things: seeded inputs and the callables to compare."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import torch

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.safe_paths import inside
from kernel_bakeoff.scripts.spec import InputSpec, OpSpec, Workload

_module_counter = 0


def import_file(path: Path, where: str):
    """Import a python file as a fresh module (its directory goes on sys.path for siblings)."""
    global _module_counter
    path = Path(path)
    if not path.is_file():
        raise BadInput(where, f"file {path} does not exist")
    _module_counter += 1
    name = f"_bakeoff_mod_{_module_counter}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    parent = str(path.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise BadInput(where, f"importing {path.name} raised {type(exc).__name__}: {exc}") from exc
    return module


def top_level_names(source: str) -> set[str] | None:
    """Names a module binds outside functions and classes, read without running it (those bound
    under an `if` or `try` count); None when the text cannot tell (a star import).
    Raises SyntaxError."""
    names: set[str] = set()
    return names if _bind(ast.parse(source).body, names) else None


def _bind(statements, names: set[str]) -> bool:
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return False
                names.add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        else:  # if / try / with / for: look inside their blocks
            for block in ("body", "orelse", "finalbody"):
                if not _bind(getattr(node, block, []), names):
                    return False
            for handler in getattr(node, "handlers", []):
                if not _bind(handler.body, names):
                    return False
    return True


def check_entry(src_dir: Path, entry: str, where: str) -> None:
    """Refuse an entry 'file.py:symbol' whose file is missing, does not parse, or plainly does
    not define the symbol; read, not run."""
    file_part, _, symbol = entry.partition(":")
    path = inside(src_dir, file_part, where)
    if not path.is_file():
        raise BadInput(where, f"{entry!r}: file {file_part} not found")
    try:
        names = top_level_names(path.read_text())
    except SyntaxError as exc:
        raise BadInput(f"{path}:{exc.lineno}", f"not valid Python: {exc.msg}") from None
    if names is not None and symbol not in names:
        raise BadInput(where, f"{entry!r}: {file_part} defines no {symbol!r}")


def resolve_entry(src: Path, entry: str, where: str):
    """`entry` is 'file.py:symbol'; `src` is a directory, or a single file that replaces file.py."""
    file_part, _, symbol = entry.partition(":")
    src = Path(src)
    path = src if src.is_file() else inside(src, file_part, where)
    module = import_file(path, where)
    try:
        return getattr(module, symbol)
    except AttributeError:
        raise BadInput(where, f"{path.name} defines no {symbol!r}") from None


def shape_of(inp: InputSpec, dims: dict[str, int], where: str) -> list[int]:
    shape = []
    for d in inp.shape:
        if isinstance(d, int):
            shape.append(d)
        elif d in dims:
            shape.append(int(dims[d]))
        else:
            raise BadInput(
                where, f"input {inp.name!r} needs dimension {d!r}, which the workload does not set"
            )
    if any(s < 0 for s in shape):
        raise BadInput(where, f"input {inp.name!r} has a negative dimension {shape}")
    return shape


def drawn(inp: InputSpec, workload: Workload) -> InputSpec:
    """`inp` with the distribution `workload` gives it, if it gives one."""
    draw = workload.draws.get(inp.name)
    if draw is None:
        return inp
    return inp.model_copy(update=draw.model_dump(exclude_none=True))


def generate(inp: InputSpec, shape: list[int], gen: torch.Generator, device: str) -> torch.Tensor:
    dtype = getattr(torch, inp.dtype)
    if inp.init == "randint" or not dtype.is_floating_point:
        t = torch.randint(inp.low, max(inp.high, inp.low + 1), shape, generator=gen, device=device)
        return t.to(dtype)
    if inp.init == "ones":
        return torch.ones(shape, dtype=dtype, device=device) * inp.scale + inp.offset
    if inp.init == "zeros":
        return torch.zeros(shape, dtype=dtype, device=device) + inp.offset
    fill = torch.randn if inp.init == "randn" else torch.rand
    values = fill(shape, generator=gen, device=device, dtype=torch.float32) * inp.scale
    return (values + inp.offset if inp.offset else values).to(dtype)


def generator(seed: int, device: str) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    return gen


def native_inputs(spec: OpSpec, workload: Workload, seed: int, device: str) -> list[torch.Tensor]:
    where = f"workload {workload.name!r}"
    gen = generator(seed, device)
    return [
        generate(drawn(inp, workload), shape_of(inp, workload.dims, where), gen, device)
        for inp in spec.inputs
    ]
