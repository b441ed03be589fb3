"""Kernels the scripted model writes in the agent tests (Triton, run under TRITON_INTERPRET=1).

Under the interpreter the cost is per program, so a kernel that handles BLOCK_M rows per program
beats the shipped one-row-per-program softmax by a wide margin on the CPU as well.
"""

SOFTMAX_ROWS = """import torch
import triton
import triton.language as tl


@triton.jit
def _rows(x_ptr, y_ptr, n_rows, n_cols, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = tl.load(x_ptr + rows * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=1)[:, None]
    num = tl.exp(x)
    tl.store(y_ptr + rows * stride + cols, num / tl.sum(num, axis=1)[:, None], mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    m, n = x.shape
    block_m = min(ROWS, triton.next_power_of_2(m))
    grid = (triton.cdiv(m, block_m),)
    _rows[grid](x, y, m, n, x.stride(0), BLOCK_M=block_m, BLOCK_N=triton.next_power_of_2(n))
    return y
"""


def rows_kernel(rows: int) -> str:
    return f"ROWS = {rows}\n" + SOFTMAX_ROWS


# Searches its own environment and every readable /proc/*/environ for anything that looks like
# an Anthropic key (or the test's key, which it is told only by its first characters).
KEY_SEARCH = """import glob
import os

_found = [k for k, v in os.environ.items() if "sk-ant-" in v or k.startswith("ANTHROPIC")]
_read = 0
for _path in glob.glob("/proc/*/environ"):
    try:
        with open(_path, "rb") as _f:
            _data = _f.read()
    except OSError:
        continue
    _read += 1
    if b"sk-ant-" in _data:
        _found.append(_path)
print(f"key search: {_read} environments read, found {len(_found)}: {_found}")
if _found:
    raise SystemExit("the key was visible to the candidate")
"""

WRONG = """import torch


def softmax(x: torch.Tensor) -> torch.Tensor:
    return x.clone()
"""


def tiny_softmax(dst):
    """examples/softmax_triton with tiny workloads: interpreted checks stay a few seconds."""
    import re
    import shutil
    from pathlib import Path

    from tests.conftest import EXAMPLES

    dst = Path(dst)
    if not dst.exists():
        shutil.copytree(EXAMPLES / "softmax_triton", dst)
        spec = (dst / "op.toml").read_text()
        spec = re.sub(r"dims = \{ M = 64, N = 256 \}", "dims = { M = 16, N = 128 }", spec)
        spec = re.sub(r"dims = \{ M = 32, N = 1000 \}", "dims = { M = 8, N = 300 }", spec)
        assert "M = 16" in spec and "M = 8" in spec
        (dst / "op.toml").write_text(spec)
    return dst


def frozen_tiny_softmax(root, samples: int = 5):
    """tiny_softmax frozen at `root/task` (its source at `root/softmax`): a copy of one freeze
    per sample count for the whole session, its workers included (BAKEOFF_TEST_FROZEN_DIR,
    tests/conftest.py). The agent modules read this task as the oracle their roles work
    against; each used to freeze its own (~4.7 s here, nine of them). A frozen task names no
    path of its own, so a copy is the same oracle."""
    import os
    import shutil
    from functools import partial
    from pathlib import Path

    from kernel_bakeoff.scripts.freeze import freeze, measure_baseline

    root = Path(root)
    src = tiny_softmax(root / "softmax")
    kept = Path(os.environ["BAKEOFF_TEST_FROZEN_DIR"]) / f"tiny_softmax-samples{samples}"
    if not kept.is_dir():
        mine = kept.with_name(f"{kept.name}.{os.getpid()}")
        freeze(src, mine, partial(measure_baseline, samples=samples))
        try:
            mine.rename(kept)  # atomic; a worker that froze it first keeps its copy
        except OSError:
            shutil.rmtree(mine, ignore_errors=True)
    return Path(shutil.copytree(kept, root / "task"))
