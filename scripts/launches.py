"""Which Triton kernels (and compiled extension functions) a candidate ran in its checked calls.

A lane of language L ranks only candidates that run L: a "Triton" candidate that returns the
reference's (or torch's) answer without launching a Triton kernel is refused from a Triton lane
(the rule is applied on the orchestration side, `tasks.check.language_rule`). The child installs these
hooks before the candidate is imported and counts launches around its checked calls (the trials).

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

The record lives in the candidate's process, so what it guarantees is bounded (docs/harness.md,
"Which kernels ran"). What it closes: the launch path is wrapped before the candidate is imported
(on triton's import, or at once where the warm server imported it), so a `run` the candidate
replaced beforehand is never what the wrapper calls; a launch is recorded only after Triton's own
`run` returned for a real `JITFunction` (a fake object handed to `run` by hand raises there);
the record is held in closures, not module attributes a candidate can append to; and the child
sends it to the judge on the marker channel once (`record_line`), not in a file the candidate
could rewrite afterwards. `torch_work.py` measures what the call did in torch beside its kernels.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import json
import sys
import types
from contextlib import contextmanager

_installed = False
_HOOKS: dict = {}  # module name -> what wraps it once imported
_hip_names: dict[int, str] = {}  # id of a hipFunction_t -> the kernel name it was got by
MAX_NAMES = 32  # names kept per record: one datagram on the marker channel holds them all
_WRAPPED: dict = {}  # Triton class -> the `run` wrapped here (`intact` compares)


def _tally():
    """The record, in closures: `add(kind, name)` while counting, `take()` ends a count and
    returns (kernels, calls), `begin()` starts one; `inside()` says a Triton launch is running
    (its own torch calls, e.g. the interpreter's copies, are not the candidate's torch work)."""
    state = {"on": False, "kernels": [], "calls": [], "depth": 0}

    def begin():
        state.update(on=True, kernels=[], calls=[])

    def add(kind: str, name: str):
        if state["on"]:
            state[kind].append(name)

    def take():
        state["on"] = False
        return state["kernels"], state["calls"]

    def enter(delta: int):
        state["depth"] += delta

    return begin, take, enter, lambda: state["depth"] > 0, add


def _kernel_name(jit) -> str | None:
    """The Python function's name behind a launched `JITFunction` (what the trusted side looks
    for among the `@triton.jit` definitions of the candidate's files)."""
    fn = getattr(jit, "fn", None)
    code = getattr(fn, "__code__", None)
    return code.co_name if code is not None else None


def _recorders(add):
    """What records a launch or a call, built around `add` so that no module attribute
    reaches the record: (wrap a Triton class, count an extension function, count hip launches)."""

    def wrap(cls) -> None:
        original = cls.run
        if getattr(original, "_bakeoff_counted", False):
            return

        def run(self, *args, grid, warmup, **kwargs):
            counted = not warmup and isinstance(self, cls)
            _enter(1)
            try:
                result = original(self, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                _enter(-1)
            name = _kernel_name(self) if counted else None
            if name:  # recorded once Triton's own run returned: it launched
                add("kernels", name)
            return result

        run._bakeoff_counted = True
        cls.run = run
        _WRAPPED[cls] = run

    def counted_call(name: str, fn):
        def call(*args, **kwargs):
            result = fn(*args, **kwargs)
            add("calls", name)
            return result

        call._bakeoff_counted = True
        call.__name__ = call.__qualname__ = getattr(fn, "__name__", name)
        call.__doc__ = getattr(fn, "__doc__", None)
        return call

    def hip_launch(hip):
        def hipModuleLaunchKernel(f, *args, **kwargs):
            result = hip(f, *args, **kwargs)
            add("calls", "hip:" + _hip_names.get(id(f), "?"))
            return result

        hipModuleLaunchKernel._bakeoff_counted = True
        return hipModuleLaunchKernel

    return wrap, counted_call, hip_launch


_begin, _take, _enter, inside, _adder = _tally()
_wrap, _counted_call, _hip_launch = _recorders(_adder)
del _adder


def intact() -> str | None:
    """The Triton launch path the candidate replaced after it was wrapped, if any (a replaced
    `run` launches unrecorded, or records what never ran)."""
    for cls, run in _WRAPPED.items():
        if cls.__dict__.get("run") is not run:
            return f"triton's {cls.__name__}.run"
    return None


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
    """Make the modules load_inline and load build count calls to their functions, hip-python
    count its launches, and Triton's launch paths record theirs (as soon as triton is imported).
    Called by the child before the candidate is imported (a candidate binds load_inline at
    import, may get its hip functions before a checked call, or replace Triton's `run`)."""
    global _HOOKS
    _HOOKS = {
        "torch.utils.cpp_extension": _wrap_builders,
        "hip.hip": _install_hip,
        "triton": lambda _module: install(),  # before the candidate can replace `run` itself
    }
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

    module.hipModuleGetFunction = hipModuleGetFunction
    module.hipModuleLaunchKernel = _hip_launch(hip)


@contextmanager
def counting(into: list[str], extensions: list[str] | None = None):
    """Add the names of the Triton kernels launched inside the block to `into`, and those of
    the compiled extension functions called there to `extensions`."""
    install()  # a candidate may import triton lazily, at its first call
    _begin()
    try:
        yield
    finally:
        kernels, calls = _take()
        into.extend(kernels)
        if extensions is not None:
            extensions.extend(calls)


def record_line(index: int, kernels: list[str], calls: list[str], work: dict) -> str:
    """The marker line that carries workload `index`'s record to the judge (one datagram)."""
    record = {
        "triton": sorted(set(kernels))[:MAX_NAMES],
        "ext": sorted(set(calls))[:MAX_NAMES],
        "work": work,
    }
    return f"launches {index} " + json.dumps(record, separators=(",", ":"))[:60000]


def device_line(index: int, kernel_us: dict[str, float]) -> str:
    """The marker line with workload `index`'s device time per kernel name over its timed
    calls (scripts/stream_audit.py; sent on a device with the audit only)."""
    top = sorted(kernel_us.items(), key=lambda kv: -kv[1])[:MAX_NAMES]
    return f"device {index} " + json.dumps({k[:200]: round(v, 3) for k, v in top})


def records(markers, count: int, kind: str = "launches") -> list[dict | str]:
    """Per workload, the record the child sent on the marker channel (the judge's side): {}
    where none came, and why it is refused where more than one did (the candidate wrote on the
    channel too) or it does not parse."""
    found: list[list[str]] = [[] for _ in range(count)]
    for line, _ in markers:
        head, _, rest = line.partition(" ")
        index, _, body = rest.partition(" ")
        if head == kind and index.isdigit() and int(index) < count:
            found[int(index)].append(body)
    out: list[dict | str] = []
    for bodies in found:
        if len(bodies) > 1:
            out.append(f"{len(bodies)} {kind} records came on the harness's channel, not one")
            continue
        try:
            record = json.loads(bodies[0]) if bodies else {}
        except ValueError:
            record = None
        lists = ("triton", "ext") if kind == "launches" else ()  # a device record: name -> us
        ok = isinstance(record, dict) and all(isinstance(record.get(k, []), list) for k in lists)
        out.append(record if ok else f"its {kind} record on the harness's channel is garbled")
    return out
