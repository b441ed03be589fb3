"""Workload inputs kept in safetensors files (a trace set's `blobs/`), read with the safetensors
library. Not `scripts/tensorfile.py`, which carries a candidate's outputs to the judge.

Any file can be named as a blob, so the library's refusal of one (a header that does not fit,
is not JSON or does not cover the data) is the input's fault: BadInput naming the file. The
library is imported when a blob is read, not with the format: a trace set without blobs needs
nothing beyond torch, as on a GPU box where only torch and triton are installed.
"""

from __future__ import annotations

from pathlib import Path

import torch

from kernel_bakeoff.scripts.errors import BadInput

# safetensors' dtype names for the dtypes an input spec can name (scripts/spec.py)
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


def _open(path: Path, key: str, where: str, read):
    """`read(opened file, key)` on the safetensors file at `path`; BadInput when it is not one,
    when it holds no tensor `key`, or when that tensor's dtype is not one of DTYPES."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise BadInput(where, f"tensor file {path} does not exist")
    try:
        path.open("rb").close()  # the library calls any failure to open "No such file"
        with safe_open(str(path), framework="pt") as f:
            keys = sorted(f.keys())
            if key not in keys:
                raise BadInput(where, f"{path.name} holds no tensor {key!r} (it holds {keys})")
            dtype = f.get_slice(key).get_dtype()
            if dtype not in DTYPES:
                raise BadInput(where, f"tensor {key!r} has dtype {dtype}, not supported here")
            return read(f, key)
    except SafetensorError as exc:
        reason = str(exc).removeprefix("Error while deserializing header: ")
        raise BadInput(where, f"{path} is not a safetensors file: {reason}") from None
    except OSError as exc:
        raise BadInput(where, f"tensor file {path} cannot be read: {exc.strerror or exc}") from None


def describe(path: Path, key: str, where: str) -> tuple[list[int], torch.dtype]:
    """Shape and dtype of tensor `key`, read from the header alone."""

    def header(f, key):
        found = f.get_slice(key)
        return list(found.get_shape()), DTYPES[found.get_dtype()]

    return _open(path, key, where, header)


def read_tensor(path: Path, key: str, where: str) -> torch.Tensor:
    return _open(path, key, where, lambda f, key: f.get_tensor(key))


def write_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """Write tensors to a safetensors file (copied to the host, contiguous, as the format needs).
    Written as any file is (`save_file` makes it readable by its owner only, and the box that
    reads a workload's inputs runs as another user)."""
    from safetensors.torch import save

    Path(path).write_bytes(save({k: t.detach().cpu().contiguous() for k, t in tensors.items()}))
