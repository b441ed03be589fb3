"""Launches a Triton kernel it did not write (defined at run time from text, as a library's or
the reference's would be) and returns torch's answer."""

import tempfile
from pathlib import Path

import torch

_SOURCE = """
import triton
import triton.language as tl


@triton.jit
def elsewhere(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(y_ptr + offs))
"""


def _load():
    import importlib.util

    path = Path(tempfile.mkdtemp()) / "elsewhere_lib.py"
    path.write_text(_SOURCE)
    spec = importlib.util.spec_from_file_location("elsewhere_lib", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.elsewhere


_elsewhere = None


def softmax(x):
    global _elsewhere
    _elsewhere = _elsewhere or _load()
    y = torch.softmax(x, dim=-1)
    _elsewhere[(1,)](y, BLOCK=16)
    return y
