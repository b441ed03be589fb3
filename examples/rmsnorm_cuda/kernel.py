"""RMSNorm's CUDA C++ kernel (rmsnorm.cu), built once per source text with load_inline.

The build goes to torch's extensions directory (TORCH_EXTENSIONS_DIR, else the user cache), under
a name derived from the source, so a candidate with other #define values builds its own."""

import hashlib
from pathlib import Path

import torch
from torch.utils.cpp_extension import load_inline

_SOURCE = Path(__file__).resolve().parent / "rmsnorm.cu"
_DECLARATION = "torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w, double eps);"
_built = {}


def _extension():
    source = _SOURCE.read_text()
    name = "rmsnorm_cuda_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    if name not in _built:
        _built[name] = load_inline(
            name=name,
            cpp_sources=_DECLARATION,
            cuda_sources=source,
            functions=["rmsnorm"],
            extra_cuda_cflags=["-O3"],
        )
    return _built[name]


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    if not x.is_cuda:
        raise RuntimeError(f"rmsnorm_cuda runs on an NVIDIA GPU; its input is on {x.device}")
    return _extension().rmsnorm(x, weight, eps)
