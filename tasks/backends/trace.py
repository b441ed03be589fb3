"""Tracing a torch reference without a model: which torch calls it makes (with shapes, dtypes and
the tensors each reads), its aten graph, its flops and the bytes it must move.

The reference runs on the meta device (shapes without memory or arithmetic), once per timed
workload, under two recorders: a TorchFunctionMode that logs the torch-level calls the user's
code makes (`F.softmax`, `F.linear`, `Tensor.sum`, ... with their non-tensor arguments), which is
what a candidate can route to a template or a library, and `make_fx`'s aten graph, where
hand-written patterns (an RMSNorm spelt as pow/mean/rsqrt/mul) are matched. Flops come from
`torch.utils.flop_counter.FlopCounterMode`; bytes are every tensor the graph reads (inputs,
parameters, buffers) and writes (outputs) once: the memory floor.

Running the reference imports user code: `trace_isolated` runs `trace` in the sandbox
(scripts/untrusted.py), and only JSON comes back.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from kernel_bakeoff.scripts.formats import module_for
from kernel_bakeoff.scripts.program import shape_of
from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.scripts.untrusted import call

_JSONABLE = (int, float, bool, str, type(None))


def _label_value(value, labels: dict[int, str]):
    """A call argument as JSON: tensors by label, dtypes by name, other objects by type name."""
    if isinstance(value, torch.Tensor):
        return {"t": labels.get(id(value), "const")}
    if isinstance(value, _JSONABLE):
        return value
    if isinstance(value, (list, tuple)):
        return [_label_value(v, labels) for v in value]
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    return {"obj": type(value).__name__}


def _desc(t: torch.Tensor) -> dict:
    return {
        "shape": list(t.shape),
        "dtype": str(t.dtype).removeprefix("torch."),
        "stride": list(t.stride()),
    }


class CallLog(TorchFunctionMode):
    """Logs the torch-level calls made by the code under it. Inside `__torch_function__` the mode
    is off, so calls that torch functions make internally are not logged: only the user's."""

    def __init__(self, labels: dict[int, str]):
        super().__init__()
        self.labels, self.calls, self._alive = labels, [], []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", str(func))
        if name in ("__get__", "__set__", "size", "dim", "numel", "stride", "is_contiguous"):
            return out
        i = len(self.calls)
        outs = out if isinstance(out, (tuple, list)) else [out]
        for j, o in enumerate(outs):
            if isinstance(o, torch.Tensor) and id(o) not in self.labels:
                self.labels[id(o)] = f"c{i}" if j == 0 else f"c{i}.{j}"
                self._alive.append(o)  # ids stay unique while the trace lasts
        self.calls.append(
            {
                "fn": name,
                "module": getattr(func, "__module__", "") or "",
                "args": [_label_value(a, self.labels) for a in args],
                "kwargs": {k: _label_value(v, self.labels) for k, v in kwargs.items()},
                "out": [self.labels.get(id(o)) for o in outs if isinstance(o, torch.Tensor)],
                "out_desc": [_desc(o) for o in outs if isinstance(o, torch.Tensor)],
            }
        )
        return out


def _aten_graph(fn, inputs, labels: dict[int, str]) -> list[dict]:
    """The reference's aten graph (no decompositions) as JSON nodes, or [] when it cannot trace."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def call(*args):  # make_fx reads the signature: defaults (eps=...) would become inputs
        return fn(*args)

    try:
        gm = make_fx(call)(*inputs)
    except Exception:
        return []
    nodes, placeholder = [], 0
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        entry = {"name": node.name, "op": node.op, "target": str(node.target)}
        if node.op == "placeholder":
            entry["input"] = f"in{placeholder}"
            placeholder += 1
        if isinstance(val, torch.Tensor):
            entry.update(_desc(val))
        entry["args"] = [_fx_arg(a) for a in node.args]
        nodes.append(entry)
    return nodes


def _fx_arg(a):
    if isinstance(a, torch.fx.Node):
        return {"n": a.name}
    if isinstance(a, (list, tuple)):
        return [_fx_arg(v) for v in a]
    return a if isinstance(a, _JSONABLE) else {"obj": type(a).__name__}


def _meta_inputs(spec, src: Path, workload) -> list:

    if spec.format == "native":
        where = f"workload {workload.name!r}"
        return [
            torch.empty(
                shape_of(i, workload.dims, where), dtype=getattr(torch, i.dtype), device="meta"
            )
            for i in spec.inputs
        ]
    return list(module_for(spec.format).make_inputs(spec, src, workload, 0, "meta"))


def trace(spec, src: Path, entry: str) -> dict:
    """Per timed workload: the call log, the aten graph, flops and bytes. Runs user code."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.set_grad_enabled(False)
    fn = module_for(spec.format).load_callable(spec, Path(src), entry, "meta")
    module = getattr(fn, "module", None)
    out: dict = {"entry": entry, "workloads": {}}
    for wl in spec.timed_workloads:
        try:
            inputs = _meta_inputs(spec, Path(src), wl)
            labels = {id(t): f"in{i}" for i, t in enumerate(inputs) if isinstance(t, torch.Tensor)}
            state = {}
            if module is not None:
                state = {f"p:{n}": t for n, t in module.state_dict(keep_vars=True).items()}
                labels.update({id(t): n for n, t in state.items()})
            log, flops = CallLog(labels), FlopCounterMode(display=False)
            with flops, log:
                result = fn(*inputs)
            results = result if isinstance(result, (tuple, list)) else [result]
            results = [r for r in results if isinstance(r, torch.Tensor)]
            read = [t for t in inputs if isinstance(t, torch.Tensor)] + list(state.values())
            nbytes = sum(t.numel() * t.element_size() for t in read + results)
            out["workloads"][wl.name] = {
                "flops": int(flops.get_total_flops()),
                "bytes": int(nbytes),
                "calls": log.calls,
                "outputs": [labels.get(id(r), "const") for r in results],
                "inputs": [_desc(t) if isinstance(t, torch.Tensor) else None for t in inputs],
                "aten": _aten_graph(fn, inputs, {}),
            }
        except Exception as exc:  # a reference the meta device cannot run: said, not fatal
            out["workloads"][wl.name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return out


def trace_step(spec: dict, src_dir: str, entry: str) -> dict:
    """What the box runs for `trace_isolated` (scripts/untrusted.py runs it by name)."""

    return trace(OpSpec.model_validate(spec), Path(src_dir), entry)


def trace_isolated(ctx, entry: str) -> dict:
    """`trace` in the sandbox, cached beside the candidates (one trace per Discover)."""

    cache = Path(ctx.workdir) / "trace.json"
    if cache.is_file():
        cached = json.loads(cache.read_text())
        if cached.get("entry") == entry and cached.get("oracle") == ctx.oracle_sha256:
            return cached
    src = str(Path(ctx.baseline_src).resolve())
    found = call(
        f"{__name__}:trace_step",
        f"{src}/{entry}",
        read=[src],  # the box sees the frozen sources and nothing else of the run
        spec=ctx.spec.model_dump(mode="json"),
        src_dir=src,
        entry=entry,
    )
    found["oracle"] = ctx.oracle_sha256
    cache.write_text(json.dumps(found))
    return found
