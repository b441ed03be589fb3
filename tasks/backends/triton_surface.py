"""The tunable surface of a Triton entry: its keyword arguments that reach a kernel launch, the
constexpr parameters and autotune configurations of the kernels its file launches, and the
configuration space these span on a given architecture."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from pathlib import Path

from kernel_bakeoff.scripts.arch import ArchInfo
from kernel_bakeoff.scripts.program import import_file
from kernel_bakeoff.scripts.untrusted import call
from kernel_bakeoff.tasks.search.space import Param, Space

LAUNCH_OPTIONS = ("num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack")
AMD_OPTIONS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")
_BLOCKISH = ("BLOCK", "TILE", "SIZE", "GROUP", "SPLIT", "CHUNK")


@dataclass
class Kernel:
    name: str
    constexprs: list[str]
    has_dot: bool
    configs: list[dict] | None = None  # flattened @triton.autotune configs, or None


@dataclass
class Surface:
    entry: str
    kwargs: dict[str, object] = field(default_factory=dict)  # tunable entry kwargs -> default
    kernels: list[Kernel] = field(default_factory=list)

    @property
    def has_dot(self) -> bool:
        return any(k.has_dot for k in self.kernels)


def launched_names(path: Path) -> list[str]:
    """Names used as `NAME[grid](...)` anywhere in the file."""
    tree = ast.parse(Path(path).read_text())
    names = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id not in names
        ):
            names.append(node.func.value.id)
    return names


def _python_fn(obj):
    seen = 0
    while not inspect.isfunction(obj) and hasattr(obj, "fn") and seen < 8:
        obj, seen = obj.fn, seen + 1
    return obj if inspect.isfunction(obj) else None


def _is_constexpr(annotation) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return "constexpr" in str(text) or "constexpr" in repr(annotation)


def _kernel(name: str, obj) -> Kernel | None:
    fn = _python_fn(obj)
    if fn is None or fn is obj:  # a plain function is not a Triton kernel
        return None
    params = inspect.signature(fn).parameters.values()
    constexprs = [
        p.name for p in params if p.annotation is not p.empty and _is_constexpr(p.annotation)
    ]
    try:
        has_dot = ".dot(" in inspect.getsource(fn)
    except (OSError, TypeError):
        has_dot = False
    configs = None
    if hasattr(obj, "configs") and isinstance(obj.configs, list):
        configs = [
            {**dict(c.kwargs), "num_warps": c.num_warps, "num_stages": c.num_stages}
            for c in obj.configs
        ]
    return Kernel(name=name, constexprs=constexprs, has_dot=has_dot, configs=configs)


def discover_isolated(src_dir: Path, entry: str) -> Surface | None:
    """`discover` in the sandbox (scripts/untrusted.py): the file is user or model code."""

    where, src = f"{src_dir}/{entry}", str(Path(src_dir).resolve())
    found = call(f"{__name__}:surface_step", where, read=[src], src_dir=src, entry=entry)
    if found is None:
        return None
    kernels = [Kernel(**k) for k in found.pop("kernels")]
    return Surface(**found, kernels=kernels)


def surface_step(src_dir: str, entry: str) -> dict | None:
    """What the box runs for `discover_isolated`: the surface as JSON."""
    from dataclasses import asdict

    surface = discover(Path(src_dir), entry)
    return None if surface is None else asdict(surface)


def discover(src_dir: Path, entry: str) -> Surface | None:
    """Import the entry's file and read its Triton surface. It runs the file's code: call it
    only in the sandbox (`discover_isolated`)."""
    file, _, symbol = entry.partition(":")
    path = Path(src_dir) / file
    module = import_file(path, f"{path}: Triton surface")
    kernels = [
        k
        for k in (_kernel(n, getattr(module, n, None)) for n in launched_names(path))
        if k is not None
    ]
    if not kernels:
        return None
    fn = getattr(module, symbol)
    constexprs = {c for k in kernels for c in k.constexprs}
    kwargs = {}
    for p in inspect.signature(fn).parameters.values():
        if p.default is p.empty or not (p.default is None or isinstance(p.default, int)):
            continue
        if p.name in LAUNCH_OPTIONS or p.name in constexprs:
            kwargs[p.name] = p.default
    return Surface(entry=entry, kwargs=kwargs, kernels=kernels)


def _pow2(lo: int, hi: int) -> list[int]:
    out, v = [], 1
    while v <= hi:
        if v >= lo:
            out.append(v)
        v *= 2
    return out


def _block_values(default) -> tuple:
    if isinstance(default, int) and not isinstance(default, bool) and default > 0:
        values = _pow2(max(16, default // 8), min(8192, default * 8))
        return tuple(sorted(set(values) | {default}))
    return (None, *_pow2(16, 8192))


def _option_values(option: str, arch: ArchInfo, has_dot: bool) -> tuple | None:
    """Legal values of a launch option on this architecture (None: not tunable here)."""
    amd = arch.vendor == "amd"
    if arch.vendor == "cpu":
        return None  # the interpreter ignores launch options: nothing to learn
    if option == "num_warps":
        return (1, 2, 4, 8) if amd else (1, 2, 4, 8, 16)
    if option == "num_stages":
        return (1, 2, 3) if amd else (1, 2, 3, 4, 5)
    if not amd:
        return None
    if option == "waves_per_eu":
        return (0, 1, 2, 4)
    if option == "matrix_instr_nonkdim":
        return (0, 16, 32) if has_dot else None
    if option == "kpack":
        return (1, 2) if has_dot and arch.arch == "gfx942" else None
    return None


def _with(values: tuple, default) -> tuple:
    return values if default in values else (default, *values)


def space(surface: Surface, arch: ArchInfo) -> tuple[Space, list[dict]]:
    """The configuration space and its default points (the incumbent's own settings first).

    Parameter names: `NAME` for an entry kwarg, `kernel.option` for a launch option forced on a
    plain jit kernel (None: as the entry launches it), `kernel:key` for a pinned autotune config
    (all None: the autotuner picks, as in the baseline).
    """
    params: list[Param] = []
    for name, default in surface.kwargs.items():
        if name in LAUNCH_OPTIONS:
            values = _option_values(name, arch, surface.has_dot)
            if values is not None:
                params.append(Param(name, _with(values, default)))
        else:
            params.append(Param(name, _block_values(default)))
    pinned: dict[str, list[str]] = {}
    extras: dict[str, list[str]] = {}  # AMD options added to a pin, never pinned alone
    for k in surface.kernels:
        if k.configs:
            keys = sorted({key for c in k.configs for key in c})
            for key in keys:
                seen = sorted({c[key] for c in k.configs if c.get(key) is not None})
                params.append(Param(f"{k.name}:{key}", (None, *seen)))
            pinned[k.name] = [f"{k.name}:{key}" for key in keys]
            for option in AMD_OPTIONS:
                values = None if option in keys else _option_values(option, arch, k.has_dot)
                if values is not None:
                    params.append(Param(f"{k.name}:{option}", (None, *values)))
                    extras.setdefault(k.name, []).append(f"{k.name}:{option}")
            continue
        for option in LAUNCH_OPTIONS:
            if option in surface.kwargs:
                continue
            values = _option_values(option, arch, k.has_dot)
            if values is not None:
                params.append(Param(f"{k.name}.{option}", (None, *values)))

    def rule(config: dict) -> str | None:
        for kernel, names in pinned.items():
            unset = [n for n in names if config[n] is None]
            if unset and len(unset) != len(names):
                return f"{kernel}: a pinned autotune config sets every key or none"
            if unset and any(config[n] is not None for n in extras.get(kernel, [])):
                return f"{kernel}: an AMD launch option needs a pinned config to go with"
        return None

    base = {p.name: (surface.kwargs[p.name] if p.name in surface.kwargs else None) for p in params}
    defaults = [base]
    for k in surface.kernels:
        for c in (k.configs or [])[:8]:
            defaults.append({**base, **{f"{k.name}:{key}": v for key, v in c.items()}})
    return Space(params, rule), defaults


def split(config: dict) -> tuple[dict, dict, dict]:
    """A space point as (entry kwargs, forced launch options per kernel, pins per kernel)."""
    kwargs, launch, pins = {}, {}, {}
    for name, value in config.items():
        if ":" in name:
            kernel, key = name.split(":", 1)
            if value is not None:
                pins.setdefault(kernel, {})[key] = value
        elif "." in name:
            kernel, option = name.split(".", 1)
            if value is not None:
                launch.setdefault(kernel, {})[option] = value
        else:
            kwargs[name] = value
    return kwargs, launch, pins
