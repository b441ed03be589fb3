"""Tensors from the candidate's process to the judge: raw bytes in a file, shape and dtype beside.

No pickle crosses: the judge reads bytes and checks that their count matches the shape and dtype
it was told, so a file the candidate tampered with is garbled at worst, never code.
"""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import torch

from scripts.protocol import SavedTensor


def save(root: Path, name: str, tensor: torch.Tensor) -> SavedTensor:
    flat = tensor.detach().contiguous().cpu().reshape(-1)
    with open(root / name, "wb") as f:
        if flat.numel():
            nbytes = flat.numel() * flat.element_size()
            f.write(memoryview((ctypes.c_char * nbytes).from_address(flat.data_ptr())))
    return SavedTensor(
        file=name, shape=list(tensor.shape), dtype=str(tensor.dtype).removeprefix("torch.")
    )


def load(root: Path, saved: SavedTensor) -> torch.Tensor | str:
    """The tensor, or why the file cannot be it."""
    dtype = getattr(torch, saved.dtype, None)
    if not isinstance(dtype, torch.dtype) or saved.file != Path(saved.file).name:
        return f"{saved.file!r}: not a file name and a dtype"
    path = root / saved.file
    if any(d < 0 for d in saved.shape):
        return f"{saved.file}: negative shape {saved.shape}"
    nbytes = math.prod(saved.shape) * dtype.itemsize
    if not path.is_file() or path.stat().st_size != nbytes:
        return f"{saved.file}: missing, or not {nbytes} bytes"
    if nbytes == 0:
        return torch.empty(saved.shape, dtype=dtype)
    raw = torch.from_file(str(path), shared=False, size=nbytes, dtype=torch.uint8)
    return raw.view(dtype).reshape(saved.shape)
