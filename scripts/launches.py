"""Which Triton kernels (and compiled extension functions) a candidate ran in its checked calls.

A lane of language L ranks only candidates that run L: a "Triton" candidate that returns the
reference's (or torch's) answer without launching a Triton kernel is refused from a Triton lane
(the rule is applied on the orchestration side, `tasks.language_rule`). The child installs this
hook after the candidate is loaded and counts launches around its checked calls (the trials).

Every launch of a `@triton.jit` function goes through its class's `run` (`fn[grid](...)` is
`run(grid=..., warmup=False)`; autotuners and heuristics end in the same `run`), natively
(`JITFunction`) and under `TRITON_INTERPRET=1` (`InterpretedFunction`), so wrapping `run` on
those two classes sees launches on a GPU and on a CPU alike. A candidate that never imported
triton launched none, so triton is not imported here for it (seconds of the child's start).

A CUDA or HIP candidate runs its own compiled code through a module that
`torch.utils.cpp_extension.load_inline` or `load` built (`install_extensions`, before the
candidate is imported: it binds those names at import), or through hip-python's
`hipModuleLaunchKernel` (what tasks/backends/hip_launch.py calls); the functions of such a
module, and those launches, are counted as the Triton launches are. Ops an extension registers
in `torch.ops` (TORCH_LIBRARY, `is_python_module=False`) are not counted.

The record lives in the candidate's process, so a candidate could fake a launch; what this
rules out is the honest-looking fake (no Triton at all), which is what was seen.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import sys
import types
from contextlib import contextmanager

_launched: list[str] | None = None  # names launched while counting; None: not counting
_called: list[str] | None = None  # extension functions called while counting
_installed = False
_HOOKS: dict = {}  # module name -> what wraps it once imported
_hip_names: dict[int, str] = {}  # id of a hipFunction_t -> the kernel name it was got by


def _wrap(cls) -> None:
    original = cls.run
    if getattr(original, "_bakeoff_counted", False):
        return

    def run(self, *args, grid, warmup, **kwargs):
        if not warmup and _launched is not None:
            fn = getattr(self, "fn", None)
            _launched.append(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "?"))
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    run._bakeoff_counted = True
    cls.run = run


def install() -> bool:
    """Wrap the launch paths of an imported triton; False where the process never imported it."""
    global _installed
    if _installed:
        return True
    if "triton" not in sys.modules:
        return False
    try:
        from triton.runtime.jit import JITFunction

        _wrap(JITFunction)
        from triton.runtime.interpreter import InterpretedFunction

        _wrap(InterpretedFunction)
    except (ImportError, AttributeError):  # a triton without these classes: nothing seen
        return False
    _installed = True
    return True


def _counted_call(name: str, fn):
    def call(*args, **kwargs):
        if _called is not None:
            _called.append(name)
        return fn(*args, **kwargs)

    call._bakeoff_counted = True
    call.__name__ = call.__qualname__ = getattr(fn, "__name__", name)
    call.__doc__ = getattr(fn, "__doc__", None)
    return call


def _count_module(module):
    """Count calls to `module`'s functions (a pybind11 module built for the candidate)."""
    if not isinstance(module, types.ModuleType):
        return module  # is_python_module=False: the library's path, its ops in torch.ops
    prefix = module.__name__.rsplit(".", 1)[-1]
    for attr, value in list(vars(module).items()):
        if attr.startswith("__") or not callable(value) or isinstance(value, type):
            continue
        if not getattr(value, "_bakeoff_counted", False):
            setattr(module, attr, _counted_call(f"{prefix}.{attr}", value))
    return module


def _counting_builder(build):
    if getattr(build, "_bakeoff_counted", False):
        return build

    @functools.wraps(build)
    def builder(*args, **kwargs):
        return _count_module(build(*args, **kwargs))

    builder._bakeoff_counted = True
    return builder


def _wrap_builders(cpp_extension) -> None:
    for name in ("load_inline", "load"):
        setattr(cpp_extension, name, _counting_builder(getattr(cpp_extension, name)))


class _OnImport(importlib.abc.MetaPathFinder):
    """Wraps a module's entry points when the candidate first imports it: importing
    torch.utils.cpp_extension for every candidate would cost each check about 0.17 s."""

    def find_spec(self, fullname, path, target=None):
        hook = _HOOKS.get(fullname)
        if hook is None:
            return None
        _HOOKS.pop(fullname)
        if not _HOOKS:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            hook(module)

        spec.loader.exec_module = exec_module
        return spec


def install_extensions() -> None:
    """Make the modules load_inline and load build count calls to their functions, and
    hip-python count its launches. Called by the child before the candidate is imported (a
    candidate binds load_inline at import, and may get its hip functions before a checked call)."""
    global _HOOKS
    _HOOKS = {"torch.utils.cpp_extension": _wrap_builders, "hip.hip": _install_hip}
    for name in list(_HOOKS):
        if name in sys.modules:
            _HOOKS.pop(name)(sys.modules[name])
    if _HOOKS and not any(isinstance(f, _OnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _OnImport())


def _install_hip(module) -> None:
    """Count hip-python's module launches, naming each by the name its function was got by."""
    hip = getattr(module, "hipModuleLaunchKernel", None)
    if hip is None or getattr(hip, "_bakeoff_counted", False):
        return
    get_function = module.hipModuleGetFunction

    def hipModuleGetFunction(mod, name, *args, **kwargs):
        result = get_function(mod, name, *args, **kwargs)
        function = result[-1] if isinstance(result, tuple) else result
        text = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        _hip_names[id(function)] = text
        return result

    def hipModuleLaunchKernel(f, *args, **kwargs):
        if _called is not None:
            _called.append("hip:" + _hip_names.get(id(f), "?"))
        return hip(f, *args, **kwargs)

    hipModuleLaunchKernel._bakeoff_counted = True
    module.hipModuleGetFunction = hipModuleGetFunction
    module.hipModuleLaunchKernel = hipModuleLaunchKernel


@contextmanager
def counting(into: list[str], extensions: list[str] | None = None):
    """Add the names of the Triton kernels launched inside the block to `into`, and those of
    the compiled extension functions called there to `extensions`."""
    global _launched, _called
    install()  # a candidate may import triton lazily, at its first call
    _launched, _called = [], []
    try:
        yield
    finally:
        into.extend(_launched)
        if extensions is not None:
            extensions.extend(_called)
        _launched = _called = None
