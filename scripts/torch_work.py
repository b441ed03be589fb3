"""What a Triton candidate's call computed in torch beside its Triton kernels.

A "Triton" candidate can launch a trivial Triton kernel (or one that copies torch's answer into
the output) and let torch do the op: it launched Triton, and the work is torch's. So after its
first trial, a candidate whose calls launched a Triton kernel runs its other trials under a
dispatch mode that sees every aten op the call dispatched outside its Triton launches
(`launches.inside`: the interpreter's own copies are not the candidate's) and counts the tensor
elements each compute op read. Allocation, fills, views, layout copies and casts are
bookkeeping, not the op's work, and are not counted (a `.contiguous()` of the input is honest).

The count is elements read, not time: it is the same on a CPU under TRITON_INTERPRET=1 and on a
GPU, and no test depends on the machine's speed. `tasks.check.language_rule` compares it with the
elements of the call's inputs. What it cannot see: work outside torch's dispatcher (numpy,
Python loops, another library's own kernels), and a candidate that notices the mode (it is in
its process) and behaves otherwise in the unobserved calls; docs/harness.md says where the
line is.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from kernel_bakeoff.scripts import launches

# Ops that allocate, fill with a constant, reshape, or copy/cast: bookkeeping around a kernel.
BOOKKEEPING = frozenset(
    """empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros
    ones ones_like new_ones full full_like new_full fill_ zero_ scalar_tensor arange
    clone copy_ _to_copy contiguous resize_ detach alias lift_fresh set_ _local_scalar_dense
    view _unsafe_view reshape as_strided t transpose permute expand squeeze unsqueeze flatten
    unflatten select slice narrow split split_with_sizes chunk unbind view_as expand_as
    _reshape_alias""".split()
)


def _elements(args, kwargs) -> int:
    return sum(t.numel() for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor))


class TorchWork(TorchDispatchMode):
    """Counts, per aten op, the elements that compute ops outside Triton launches read."""

    def __init__(self):
        super().__init__()
        self.read: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if not launches.inside() and not func.is_view and name not in BOOKKEEPING:
            self.read[name] = self.read.get(name, 0) + _elements(args, kwargs)
        return func(*args, **kwargs)


class Tally:
    """Per workload: elements read by torch compute outside Triton, over the observed calls."""

    def __init__(self):
        self.calls = 0
        self.inputs = 0
        self.read: dict[str, int] = {}

    def observe(self, call, args):
        """`call(*args)` under the mode; its result."""
        mode = TorchWork()
        with mode:
            result = call(*args)
        self.calls += 1
        self.inputs += sum(a.numel() for a in args if isinstance(a, torch.Tensor))
        if isinstance(call, torch.nn.Module):  # a KernelBench model's weights are its inputs too
            self.inputs += sum(t.numel() for t in (*call.parameters(), *call.buffers()))
        for op, n in mode.read.items():
            self.read[op] = self.read.get(op, 0) + n
        return result

    def summary(self) -> dict:
        """Per call: the call's input elements and the elements each torch op read (absent when
        no call was observed: one trial, or no Triton launched in the first)."""
        if not self.calls:
            return {}
        per_call = {op: n // self.calls for op, n in sorted(self.read.items())}
        return {"inputs": self.inputs // self.calls, "torch_read": per_call}
