"""The launch-parameter and `#define` space of a C++ (CUDA or HIP) kernel compiled at run time.

Tunables are integer `#define NAME VALUE` lines whose names say what they are (BLOCK, THREADS,
TILE, UNROLL, VEC, ...), in .cu/.hip/.cpp/.h files or in Python strings handed to load_inline or
hiprtc, plus integer keyword arguments of the Python entry (threads=256, ...). A candidate is the
frozen tree with the values rewritten, called through the entry with the chosen keywords.
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path

from kernel_bakeoff.tasks.backends import wrappers
from kernel_bakeoff.tasks.backends.base import FROZEN_DIR, BuildContext, write_candidate
from kernel_bakeoff.tasks.backends.source import cpp_sources
from kernel_bakeoff.tasks.models.plan import CandidateRef
from kernel_bakeoff.tasks.search.space import Param, Space, Tunable, key

_DEFINE = re.compile(
    r"^(?P<head>[ \t]*#[ \t]*define[ \t]+(?P<name>[A-Z][A-Z0-9_]*)[ \t]+)(?P<value>\d+)(?P<tail>[ \t]*(?://.*)?)$",
    re.M,
)
_TUNABLE_WORDS = (
    "BLOCK",
    "THREAD",
    "TILE",
    "UNROLL",
    "VEC",
    "WARP",
    "ITEMS",
    "ROWS",
    "COLS",
    "CHUNK",
    "STAGE",
    "WIDTH",
)
_KWARG_WORDS = ("thread", "block", "tile", "unroll", "vec", "warp", "items", "rows_per")


def _tunable_name(name: str, words) -> bool:
    return any(w in name for w in words)


def find_defines(src: Path) -> dict[str, int]:
    """Tunable integer defines across the tree: name -> value (first definition wins)."""
    found: dict[str, int] = {}
    for path in cpp_sources(src):
        for m in _DEFINE.finditer(path.read_text(errors="replace")):
            if _tunable_name(m["name"], _TUNABLE_WORDS):
                found.setdefault(m["name"], int(m["value"]))
    return found


def rewrite(text: str, values: dict[str, int]) -> str:
    def sub(m: re.Match) -> str:
        if m["name"] in values:
            return f"{m['head']}{values[m['name']]}{m['tail']}"
        return m[0]

    return _DEFINE.sub(sub, text)


def entry_int_kwargs(path: Path, symbol: str) -> dict[str, int]:
    """Integer keyword defaults of the entry function that look like launch parameters."""
    tree = ast.parse(Path(path).read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == symbol:
            args = node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + list(
                node.args.defaults
            )
            defaults += list(node.args.kw_defaults)
            out = {}
            for arg, default in zip(args, defaults):
                if (
                    isinstance(default, ast.Constant)
                    and type(default.value) is int
                    and _tunable_name(arg.arg.lower(), _KWARG_WORDS)
                ):
                    out[arg.arg] = default.value
            return out
    return {}


def values_around(default: int, cap: int = 1024) -> tuple[int, ...]:
    """Powers of two from a quarter to four times a power-of-two default; else halves/doubles."""
    if default > 0 and default & (default - 1) == 0:
        vals = [v for v in (default >> 2, default >> 1, default, default << 1, default << 2) if v]
    else:
        vals = [max(1, default // 2), default, default * 2]
    return tuple(sorted({v for v in vals if v <= max(cap, default)}))


def _cap(name: str) -> int:
    return 1024 if "THREAD" in name.upper() or name.upper().endswith("BLOCK_SIZE") else 1 << 16


def tunable(ctx: BuildContext, language: str, origin: str, source: Path | None = None):
    src = Path(source or ctx.baseline_src)
    defines = find_defines(src)
    entry_path = src / ctx.entry_file
    kwargs = entry_int_kwargs(entry_path, ctx.entry_symbol) if entry_path.is_file() else {}
    params = [Param(f"#{n}", values_around(v, _cap(n))) for n, v in defines.items()]
    params += [Param(n, values_around(v, _cap(n))) for n, v in kwargs.items()]
    if not params:
        return None
    default = {**{f"#{n}": v for n, v in defines.items()}, **kwargs}

    def build(config: dict) -> CandidateRef:
        digest = hashlib.sha256(key(config).encode()).hexdigest()[:10]
        name = f"{language}-defines-{digest}"
        call_kwargs = {k: v for k, v in config.items() if not k.startswith("#")}
        text = wrappers.with_kwargs(ctx, ctx.spec.entry, call_kwargs, origin)
        out = write_candidate(ctx, name, text, src=src)
        new_values = {k[1:]: v for k, v in config.items() if k.startswith("#")}
        for path in cpp_sources(out / FROZEN_DIR):
            text = path.read_text()
            changed = rewrite(text, new_values)
            if changed != text:
                path.write_text(changed)
        return CandidateRef(
            name=name,
            language=language,
            mode="optimize" if source is None else "author",
            path=str(out),
            origin=f"{origin} search",
            params=config,
        )

    return Tunable(Space(params), build, [default], language=language, origin=origin)
