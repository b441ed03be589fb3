"""Row softmax in Triton: one program per row. Runs under TRITON_INTERPRET=1 on the CPU."""

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_row(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


def softmax(x: torch.Tensor, BLOCK: int | None = None, num_warps: int = 4) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    block = BLOCK or triton.next_power_of_2(x.shape[-1])
    _softmax_row[(x.shape[0],)](x, y, x.shape[-1], x.stride(0), BLOCK=block, num_warps=num_warps)
    return y
