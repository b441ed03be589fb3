"""Tensors from the candidate's process to the judge: raw bytes in a file, shape and dtype beside.

No pickle crosses: the judge reads bytes and checks that their count matches the shape and dtype
it was told, so a file the candidate tampered with is garbled at worst, never code.
"""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import torch

from kernel_bakeoff.scripts import untrusted_file
from kernel_bakeoff.scripts.protocol import SavedTensor


def save(root: Path, name: str, tensor: torch.Tensor) -> SavedTensor:
    flat = tensor.detach().contiguous().cpu().reshape(-1)
    with open(root / name, "wb") as f:
        if flat.numel():
            nbytes = flat.numel() * flat.element_size()
            f.write(memoryview((ctypes.c_char * nbytes).from_address(flat.data_ptr())))
    return SavedTensor(
        file=name, shape=list(tensor.shape), dtype=str(tensor.dtype).removeprefix("torch.")
    )


# What an output may be: the dtypes a comparison knows, by name, never looked up on torch (a
# name such as "_dynamo" would import modules in the judge).
DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float64,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
        torch.complex64,
        torch.complex128,
    )
    + tuple(
        getattr(torch, n)
        for n in (
            "float8_e4m3fn",
            "float8_e5m2",
            "float8_e4m3fnuz",
            "float8_e5m2fnuz",
            "uint16",
            "uint32",
            "uint64",
        )
        if isinstance(getattr(torch, n, None), torch.dtype)
    )
}
MAX_BYTES = 16 * 2**30  # an output larger than this is not read (the judge's memory)


def load(root: Path, saved: SavedTensor) -> torch.Tensor | str:
    """The tensor, or why the file cannot be it."""
    dtype = DTYPES.get(saved.dtype)
    if dtype is None or saved.file != Path(saved.file).name or saved.file in ("", ".", ".."):
        return f"{saved.file!r}: not a file name and a dtype"
    if any(d < 0 for d in saved.shape) or len(saved.shape) > 16:
        return f"{saved.file}: not a shape {saved.shape}"
    nbytes = math.prod(saved.shape) * dtype.itemsize
    if nbytes > MAX_BYTES:
        return f"{saved.file}: {nbytes} bytes, more than the judge reads"
    try:
        data = untrusted_file.read_bytes(root / saved.file, nbytes)
    except untrusted_file.Unusable as exc:
        return str(exc)
    if len(data) != nbytes:
        return f"{saved.file}: not {nbytes} bytes"
    if nbytes == 0:
        return torch.empty(saved.shape, dtype=dtype)
    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return raw.view(dtype).reshape(saved.shape)
