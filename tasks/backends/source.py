"""Reading frozen sources without running them: which language a file is written in, and what kind
of symbol an entry names. Plain `ast` walks; nothing here imports the code it reads."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kernel_bakeoff.scripts.spec import OpSpec

# Modules a "pure torch" file may import: a torch.compile / TunableOp candidate wraps such code.
_TORCH_ONLY = {
    "torch",
    "math",
    "numpy",
    "typing",
    "functools",
    "__future__",
    "dataclasses",
    "operator",
    "itertools",
    "collections",
    "einops",
}
_NOT_TORCH = ("torch.utils.cpp_extension", "torch.cuda.jiterator")
_CPP_SUFFIXES = (".cu", ".cuh", ".hip", ".cpp", ".cc", ".h", ".hpp")


def parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def imported_modules(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                names.add("." * node.level + (node.module or ""))
            elif node.module:
                names.add(node.module)
                names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def is_pure_torch(path: Path) -> bool:
    """True when the file imports nothing beyond torch and the standard numeric helpers."""
    tree = parse(path)
    if tree is None:
        return False
    mods = imported_modules(tree)
    if any(m.startswith(_NOT_TORCH) for m in mods):
        return False
    return "torch" in {m.split(".")[0] for m in mods} and all(
        m.split(".")[0] in _TORCH_ONLY for m in mods
    )


def symbol_kind(path: Path, symbol: str) -> str | None:
    """'function' or 'class' for a top-level definition in the file, else None."""
    tree = parse(path)
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == symbol:
            return "function"
        if isinstance(node, ast.ClassDef) and node.name == symbol:
            return "class"
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == symbol for t in node.targets
        ):
            return "function"
    return None


def torch_entry(spec: OpSpec, src: Path) -> str | None:
    """The op's plain-torch implementation ('file.py:symbol'): the entry, else the reference."""
    for entry in (spec.entry, spec.reference):
        if entry and is_pure_torch(Path(src) / entry.partition(":")[0]):
            return entry
    return None


def uses_triton(path: Path) -> bool:
    tree = parse(path)
    return tree is not None and any(m.split(".")[0] == "triton" for m in imported_modules(tree))


def cpp_sources(src: Path) -> list[Path]:
    """C++/CUDA/HIP source files, and Python files that carry C++ in strings (load_inline)."""
    src = Path(src)
    found = [p for p in sorted(src.rglob("*")) if p.suffix in _CPP_SUFFIXES]
    for p in sorted(src.rglob("*.py")):
        text = p.read_text(errors="replace")
        if "__global__" in text and re.search(r"^\s*#\s*define\s", text, re.M):
            found.append(p)
    return found


def cpp_dialect(src: Path) -> str | None:
    """'hip' or 'cuda' for a source tree with device code, judged by how it is built and run."""
    files = cpp_sources(src)
    text = "\n".join(p.read_text(errors="replace") for p in files)
    py = "\n".join(p.read_text(errors="replace") for p in Path(src).rglob("*.py"))
    if not files:
        return None
    if any(p.suffix == ".hip" for p in files) or "hiprtc" in py or "from hip import" in py:
        return "hip"
    if "__global__" in text:
        return "cuda"
    return None
