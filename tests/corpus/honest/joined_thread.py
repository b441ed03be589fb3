"""Honest: half the rows on a worker thread, joined before returning (a properly joined side task)."""

import threading

import torch


def _rows(x, weight, eps, out, lo, hi):
    xs = x[lo:hi]
    out[lo:hi] = xs * torch.rsqrt(xs.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def rmsnorm(x, weight, eps=1e-6):
    out = torch.empty_like(x)
    half = x.shape[0] // 2
    worker = threading.Thread(target=_rows, args=(x, weight, eps, out, 0, half))
    worker.start()
    _rows(x, weight, eps, out, half, x.shape[0])
    worker.join()
    return out
