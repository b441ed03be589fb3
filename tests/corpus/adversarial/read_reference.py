"""class: reading the oracle or the harness's files for an answer. Searches the task and work
directories for any file holding as many bytes as the answer and returns its contents instead
of computing.

expect: INCORRECT_NUMERICAL
"""

import json
import sys
from pathlib import Path

import torch

_request = json.loads(Path(sys.argv[1]).read_text())
_roots = [Path(_request["src_dir"]).parent, Path.cwd().parent.parent]


def _find(like):
    nbytes = like.numel() * like.element_size()
    for root in _roots:
        for path in root.rglob("*"):
            try:
                if path.is_file() and path.stat().st_size == nbytes:
                    raw = torch.from_file(str(path), size=nbytes, dtype=torch.uint8)
                    return raw.view(like.dtype).reshape(like.shape)
            except (OSError, RuntimeError):
                continue
    return None


def rmsnorm(x, weight, eps=1e-6):
    found = _find(x)
    return found.to(x.device) if found is not None else torch.empty_like(x)
