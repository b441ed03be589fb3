"""The `@triton.jit` functions a candidate's own files define, read on the trusted side.

The harness's list of launched kernels comes from the candidate's process (scripts/launches.py),
so a name in it is a claim. This side parses the candidate's files (never imports them: outside
the box, untrusted code is text) and a Triton lane accepts a launched name only if it is the
name of a function those files define under a decorator that jits it (`@triton.jit`,
`@jit`, `@triton.jit(...)`, under autotune or heuristics too) or that they pass to a `jit(...)`
call. A kernel of a library, of the reference, or one the candidate never wrote is not its own
Triton. A search or Discover candidate's directory holds its copy of the frozen sources
(`frozen/`), so the user's own kernels count as its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_FILES = 200  # a candidate is a few files; more is not read
MAX_BYTES = 2_000_000  # per file: a bigger one is not parsed


def _jits(expr: ast.expr) -> bool:
    """Whether a decorator or a called function is Triton's jit (by its final name)."""
    if isinstance(expr, ast.Call):
        expr = expr.func
    if isinstance(expr, ast.Attribute):
        return expr.attr == "jit"
    return isinstance(expr, ast.Name) and expr.id == "jit"


def jit_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(_jits(d) for d in node.decorator_list):
                names.add(node.name)
        elif isinstance(node, ast.Call) and _jits(node.func):
            names.update(a.id for a in node.args[:1] if isinstance(a, ast.Name))
    return names


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    found = sorted(p for p in path.rglob("*.py") if p.is_file() and not p.is_symlink())
    return found[:MAX_FILES]


def own_kernels(path: str | Path) -> set[str]:
    """Names of the functions the candidate's files at `path` (a file or directory) jit."""
    names: set[str] = set()
    for file in _files(Path(path)):
        try:
            if file.stat().st_size > MAX_BYTES:
                continue
            names |= jit_names(ast.parse(file.read_bytes(), filename=str(file)))
        except (OSError, SyntaxError, ValueError):
            continue
    return names
