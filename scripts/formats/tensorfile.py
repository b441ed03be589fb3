"""Tensors in the safetensors layout, read with torch alone (the harness box may lack the package).

The layout: an 8-byte little-endian header length, a JSON header mapping each name to its dtype,
shape and [begin, end) byte offsets into the data that follows.
"""

from __future__ import annotations

import json
from math import prod
from pathlib import Path

import torch

from scripts.errors import BadInput

DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
CODES = {v: k for k, v in DTYPES.items()}


HEADER_MAX = 100 << 20  # safetensors' own readers refuse a header over 100 MB


def read_header(path: Path, where: str) -> tuple[dict, int]:
    """(header, offset of the data) of a safetensors file; BadInput naming the file when it is
    not one (any file can be named: its first 8 bytes are not trusted as a length)."""
    path = Path(path)
    if not path.is_file():
        raise BadInput(where, f"tensor file {path} does not exist")

    def bad(what: str) -> BadInput:
        return BadInput(where, f"{path} is not a safetensors file: {what}")

    try:
        total = path.stat().st_size
        with open(path, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            if total < 8 or size > min(total - 8, HEADER_MAX):
                raise bad(f"its header length ({size} bytes) does not fit in its {total} bytes")
            raw = f.read(size)
    except OSError as exc:
        raise BadInput(where, f"tensor file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        header = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise bad("its header is not JSON") from None
    if not isinstance(header, dict):
        raise bad("its header is not a JSON object")
    for key, entry in header.items():
        if key != "__metadata__" and not _well_formed(entry, total - 8 - size):
            raise bad(f"tensor {key!r} needs dtype, shape and data_offsets inside the file")
    return header, 8 + size


def _well_formed(entry, data_bytes: int) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("dtype"), str):
        return False
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    ints = (list, tuple)
    if not (isinstance(shape, ints) and all(isinstance(d, int) and d >= 0 for d in shape)):
        return False
    if not (isinstance(offsets, ints) and len(offsets) == 2):
        return False
    begin, end = offsets
    if not (isinstance(begin, int) and isinstance(end, int) and 0 <= begin <= end <= data_bytes):
        return False
    dtype = DTYPES.get(entry["dtype"])
    return dtype is None or end - begin == dtype.itemsize * prod(shape)


def _entry(header: dict, path: Path, key: str, where: str) -> dict:
    if key not in header or key == "__metadata__":
        keys = sorted(k for k in header if k != "__metadata__")
        raise BadInput(where, f"{Path(path).name} holds no tensor {key!r} (it holds {keys})")
    entry = header[key]
    if entry["dtype"] not in DTYPES:
        raise BadInput(where, f"tensor {key!r} has dtype {entry['dtype']}, not supported here")
    return entry


def describe(path: Path, key: str, where: str) -> tuple[list[int], torch.dtype]:
    """Shape and dtype of tensor `key`, read from the header alone."""
    entry = _entry(read_header(path, where)[0], path, key, where)
    return list(entry["shape"]), DTYPES[entry["dtype"]]


def read_tensor(path: Path, key: str, where: str) -> torch.Tensor:
    header, data_start = read_header(path, where)
    entry = _entry(header, path, key, where)
    shape, dtype = list(entry["shape"]), DTYPES[entry["dtype"]]
    begin, end = entry["data_offsets"]
    with open(path, "rb") as f:
        f.seek(data_start + begin)
        data = bytearray(f.read(end - begin))
    if not data:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(data, dtype=dtype).reshape(shape)


def write_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """Write tensors (contiguous, little-endian) in the safetensors layout."""
    header, chunks, offset = {}, [], 0
    for name, tensor in tensors.items():
        raw = tensor.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {
            "dtype": CODES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)  # data aligned to 8 bytes, as the format prefers
    Path(path).write_bytes(len(encoded).to_bytes(8, "little") + encoded + b"".join(chunks))
