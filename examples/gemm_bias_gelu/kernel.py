"""GEMM with a bias + GELU epilogue in Triton: one program per output tile, fp32 accumulator.

The epilogue runs on the accumulator in registers, so the product never goes back to memory
before the activation. Runs under TRITON_INTERPRET=1 on the CPU.
"""

import torch
import triton
import triton.language as tl

SQRT1_2 = tl.constexpr(0.7071067811865476)  # a global a kernel reads must be constexpr


@triton.jit
def _gemm_bias_gelu(
    x_ptr, w_ptr, bias_ptr, y_ptr,
    M, N, K,
    stride_xm, stride_xk, stride_wk, stride_wn, stride_ym, stride_yn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + ks
        x = tl.load(
            x_ptr + rows[:, None] * stride_xm + k[None, :] * stride_xk,
            mask=(rows[:, None] < M) & (k[None, :] < K),
            other=0.0,
        )
        w = tl.load(
            w_ptr + k[:, None] * stride_wk + cols[None, :] * stride_wn,
            mask=(k[:, None] < K) & (cols[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(x, w, acc)
    acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    y = 0.5 * acc * (1.0 + tl.erf(acc * SQRT1_2))
    tl.store(
        y_ptr + rows[:, None] * stride_ym + cols[None, :] * stride_yn,
        y.to(y_ptr.dtype.element_ty),
        mask=(rows[:, None] < M) & (cols[None, :] < N),
    )


def gemm_bias_gelu(
    x: torch.Tensor,
    w: torch.Tensor,
    bias: torch.Tensor,
    BLOCK_M: int = 32,
    BLOCK_N: int = 32,
    BLOCK_K: int = 32,
    num_warps: int = 4,
) -> torch.Tensor:
    M, K = x.shape
    N = w.shape[1]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    _gemm_bias_gelu[grid](
        x, w, bias, y, M, N, K,
        x.stride(0), x.stride(1), w.stride(0), w.stride(1), y.stride(0), y.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=num_warps,
    )  # fmt: skip
    return y
