"""Which Triton kernels a candidate launched in its checked calls.

A lane of language L ranks only candidates that run L: a "Triton" candidate that returns the
reference's (or torch's) answer without launching a Triton kernel is refused from a Triton lane
(the rule is applied on the orchestration side, `tasks.language_rule`). The child installs this
hook after the candidate is loaded and counts launches around its checked calls (the trials).

Every launch of a `@triton.jit` function goes through its class's `run` (`fn[grid](...)` is
`run(grid=..., warmup=False)`; autotuners and heuristics end in the same `run`), natively
(`JITFunction`) and under `TRITON_INTERPRET=1` (`InterpretedFunction`), so wrapping `run` on
those two classes sees launches on a GPU and on a CPU alike. A candidate that never imported
triton launched none, so triton is not imported here for it (seconds of the child's start).

The record lives in the candidate's process, so a candidate could fake a launch; what this
rules out is the honest-looking fake (no Triton at all), which is what was seen.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

_launched: list[str] | None = None  # names launched while counting; None: not counting
_installed = False


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


@contextmanager
def counting(into: list[str]):
    """Add the names of the Triton kernels launched inside the block to `into`."""
    global _launched
    install()  # a candidate may import triton lazily, at its first call
    _launched = []
    try:
        yield
    finally:
        into.extend(_launched)
        _launched = None
