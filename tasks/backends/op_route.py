"""Route matched torch calls to another implementation (a rendered template, a library's kernel);
self-contained, so a candidate carries a copy beside its wrapper with `impl.py` (the replacement)
and `route.json` (what was matched: the op, and for a GEMM the epilogue that follows it).

`impl.py` defines functions under the canonical names below; each returns a tensor, or None when
it does not take that call (a dtype, layout or option it lacks), and then torch runs it as
before. Everything the reference does besides the matched op stays torch.

    softmax(x, dim) / log_softmax(x, dim)
    softmax_dim(x, dim) / log_softmax_dim(x, dim)    over a dim that is not the last
    layer_norm(x, normalized_shape, weight, bias, eps)
    rms_norm(x, normalized_shape, weight, eps)
    group_norm(x, num_groups, weight, bias, eps)
    batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    instance_norm(x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)
    cross_entropy(logits, target, reduction)
    linear(x, w, bias, *extras)        (the matched epilogue applied inside; deferred as below;
                                       extras: a tensor its first step reads, `y + self.bias`)
    matmul(a, b, *extras)              torch.matmul / mm / bmm / @ (epilogue likewise)
    conv(x, w, bias, stride, padding, dilation, groups, output_padding, transposed, *extras)
                                       torch's conv1d/2d/3d and conv_transpose1d/2d/3d
                                       (epilogue fused and deferred like a GEMM's)
    pool(x, d, is_max, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad,
         divisor_override)             max_pool1d/2d/3d, avg_pool1d/2d/3d (values only)
    elementwise(y)                     for conv_epilogue: the elementwise region after a
                                       convolution (torch's), applied to its output y when
                                       the region's first call reads it
    sum / mean / amax / amin / prod / argmax / argmin(x, dim, keepdim)
    max_dim / min_dim(x, dim, keepdim)   torch.max(x, dim): (values, indices)
    cumsum(x, dim)
    scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    swiglu(a, b) / geglu(a, b, approximate)   silu(a) * b / gelu(a) * b, a and b of one shape
    linear_cross_entropy(x, w, bias, target, reduction)   cross_entropy(linear(x, w, bias), target)

These are two calls each: the first (silu, gelu, linear) returns a placeholder (its output,
not yet computed), and the second, reading it, gets the fused function's result. Any other use
of the placeholder (the matcher saw none) fills it with the first call's output, so it never
leaks. (A linear's placeholder is still allocated at the logits' size, for that fill.)
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

_HERE = Path(__file__).resolve().parent
REDUCTIONS = ("sum", "mean", "amax", "amin", "prod", "argmax", "argmin")
# Ops of two calls, fused: the first call's name (its output read by the second only).
DEFERRED = {"swiglu": "silu", "geglu": "gelu", "linear_cross_entropy": "linear"}
MULS = ("mul", "__mul__", "__rmul__")
MATMULS = ("matmul", "mm", "bmm", "__matmul__")
# a GEMM (or convolution) whose epilogue is fused: deferred to its first step
GEMMS = ("linear", "matmul", "conv")
CONVS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
POOLS = tuple(f"{k}_pool{d}d" for k in ("max", "avg") for d in (1, 2, 3))
# Calls that read a tensor's metadata only: a placeholder answers them as it is.
_META = ("__get__", "__set__", "size", "dim", "numel", "stride", "is_contiguous")


def _arg(args, kwargs, i, name, default=None):
    return args[i] if len(args) > i else kwargs.get(name, default)


def operands(op: str, fn: str, args, kwargs):
    """The canonical operands of a torch call for `op`, or None when it is not that op's call."""
    if not args or not isinstance(args[0], torch.Tensor):
        return None
    x = args[0]
    if op in ("softmax_dim", "log_softmax_dim") and fn == op[:-4]:
        return None if kwargs.get("dtype") is not None else (x, _arg(args, kwargs, 1, "dim"))
    if op in ("softmax", "log_softmax", "cumsum") and fn == op:
        if kwargs.get("dtype") is not None:
            return None
        return (x, _arg(args, kwargs, 1, "dim"))
    if op == "layer_norm" and fn == "layer_norm":
        shape = _arg(args, kwargs, 1, "normalized_shape")
        return (x, tuple(shape), _arg(args, kwargs, 2, "weight"), _arg(args, kwargs, 3, "bias"),
                _arg(args, kwargs, 4, "eps", 1e-5))  # fmt: skip
    if op == "rms_norm" and fn == "rms_norm":
        shape = _arg(args, kwargs, 1, "normalized_shape")
        return (x, tuple(shape), _arg(args, kwargs, 2, "weight"), _arg(args, kwargs, 3, "eps"))
    if op == "batch_norm" and fn == "batch_norm":
        names = ("running_mean", "running_var", "weight", "bias", "training", "momentum", "eps")
        defaults = (None, None, None, None, False, 0.1, 1e-5)
        return (
            x,
            *[_arg(args, kwargs, 1 + i, n, d) for i, (n, d) in enumerate(zip(names, defaults))],
        )
    if op == "group_norm" and fn == "group_norm":
        return (x, _arg(args, kwargs, 1, "num_groups"), _arg(args, kwargs, 2, "weight"),
                _arg(args, kwargs, 3, "bias"), _arg(args, kwargs, 4, "eps", 1e-5))  # fmt: skip
    if op == "instance_norm" and fn == "instance_norm":
        names = ("running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum")
        defaults = (None, None, None, None, True, 0.1)
        rest = [_arg(args, kwargs, 1 + i, n, d) for i, (n, d) in enumerate(zip(names, defaults))]
        return (x, *rest, _arg(args, kwargs, 7, "eps", 1e-5))
    if op == "cross_entropy" and fn == "cross_entropy":
        plain = (
            _arg(args, kwargs, 2, "weight") is None
            and _arg(args, kwargs, 4, "ignore_index", -100) == -100
            and _arg(args, kwargs, 7, "label_smoothing", 0.0) == 0.0
            and _arg(args, kwargs, 3, "size_average") is None
            and _arg(args, kwargs, 5, "reduce") is None
        )
        return (x, args[1], _arg(args, kwargs, 6, "reduction", "mean")) if plain else None
    if op == "linear" and fn == "linear":
        return (x, args[1], _arg(args, kwargs, 2, "bias"))
    if op == "conv" and fn in CONVS and len(args) > 1 and isinstance(args[1], torch.Tensor):
        transposed = "transpose" in fn
        names = ("stride", "padding", "output_padding", "groups", "dilation") if transposed else (
            "stride", "padding", "dilation", "groups")  # fmt: skip
        v = {
            n: _arg(args, kwargs, 3 + i, n, 0 if "padding" in n else 1) for i, n in enumerate(names)
        }
        return (x, args[1], _arg(args, kwargs, 2, "bias"), v["stride"], v["padding"],
                v["dilation"], v["groups"], v.get("output_padding", 0), transposed)  # fmt: skip
    if op == "pool" and fn in POOLS:
        is_max, d = fn.startswith("max"), int(fn[-2])
        k, stride, padding = (_arg(args, kwargs, i, n, v) for i, n, v in
                              ((1, "kernel_size", None), (2, "stride", None), (3, "padding", 0)))  # fmt: skip
        if is_max:
            if _arg(args, kwargs, 6, "return_indices", False):
                return None
            dilation, ceil = (
                _arg(args, kwargs, 4, "dilation", 1),
                _arg(args, kwargs, 5, "ceil_mode", False),
            )
            include, divisor = True, None
        else:
            dilation, ceil = 1, _arg(args, kwargs, 4, "ceil_mode", False)
            include = _arg(args, kwargs, 5, "count_include_pad", True)
            divisor = _arg(args, kwargs, 6, "divisor_override", None) if d > 1 else None
        return (x, d, is_max, k, stride, padding, dilation, ceil, include, divisor)
    if op == "matmul" and fn in MATMULS:
        b = _arg(args, kwargs, 1, "other", _arg(args, kwargs, 1, "mat2"))
        return (x, b) if isinstance(b, torch.Tensor) and not kwargs.get("out") else None
    if op == "scaled_dot_product_attention" and fn == op and len(args) >= 3:
        names = ("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
        defaults = (None, 0.0, False, None, False)
        rest = [_arg(args, kwargs, 3 + i, n, d) for i, (n, d) in enumerate(zip(names, defaults))]
        return (x, args[1], args[2], *rest)
    if op in ("max_dim", "min_dim") and fn == op[:3]:
        dim = _arg(args, kwargs, 1, "dim")
        return (
            (x, dim, bool(_arg(args, kwargs, 2, "keepdim", False)))
            if isinstance(dim, int)
            else None
        )
    if op in REDUCTIONS and fn == op:
        dim = _arg(args, kwargs, 1, "dim")
        if kwargs.get("dtype") is not None or dim is None:
            return None
        return (x, dim, bool(_arg(args, kwargs, 2, "keepdim", False)))
    return None


def gate(op: str, fn: str, args, kwargs):
    """The extra operands of a deferred op's first call (() for silu, (approximate,) for gelu,
    (bias,) for linear), or None when the call is not its first (an in-place silu is not)."""
    if DEFERRED.get(op) != fn or not args or not isinstance(args[0], torch.Tensor):
        return None
    if fn == "silu":
        return None if _arg(args, kwargs, 1, "inplace", False) else ()
    if fn == "linear":
        ok = len(args) > 1 and isinstance(args[1], torch.Tensor)
        return (_arg(args, kwargs, 2, "bias"),) if ok else None
    return (_arg(args, kwargs, 1, "approximate", "none"),)


def _placeholder(fn: str, args, kwargs=None) -> torch.Tensor:
    """The first call's output, uncomputed: the shape and dtype it would have."""
    if fn in CONVS:
        meta = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
        kw = {
            k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in (kwargs or {}).items()
        }
        return args[0].new_empty(getattr(torch.nn.functional, fn)(*meta, **kw).shape)
    if fn == "linear":
        return args[0].new_empty((*args[0].shape[:-1], args[1].shape[0]))
    if fn in MATMULS:
        shape = torch.matmul(args[0].to("meta"), args[1].to("meta")).shape
        return args[0].new_empty(shape)
    return torch.empty_like(args[0])


def deferred_operands(op: str, first: tuple, extra: tuple, ph, fn: str, args, kwargs):
    """The fused function's operands when this call is the second of `op` (reading the
    placeholder `ph` of the first, called with `first`), else None."""
    if op in ("swiglu", "geglu"):
        if fn not in MULS or len(args) != 2 or kwargs:
            return None
        other = args[1] if args[0] is ph else args[0]
        a = first[0]
        ok = isinstance(other, torch.Tensor) and other is not ph and other.shape == a.shape
        return (a, other, *extra) if ok else None
    if op in GEMMS:  # extra: (the epilogue's calls, the GEMM's operands)
        # the first step may read one more tensor (`y + self.bias`): handed over after them,
        # and the template refuses a count it was not rendered for
        ok = any(a is ph for a in args) and fn == extra[0][0]
        more = tuple(a for a in args if isinstance(a, torch.Tensor) and a is not ph)
        return (*extra[1], *more) if ok else None
    if op == "linear_cross_entropy" and args and args[0] is ph:
        ce = operands("cross_entropy", fn, args, kwargs)
        return None if ce is None else (first[0], first[1], extra[0], ce[1], ce[2])
    return None


def _load_impl(name: str):
    spec = importlib.util.spec_from_file_location(f"_bakeoff_route_{name[:-3]}", _HERE / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Route(TorchFunctionMode):
    """Sends each matched op's calls to its implementation; a GEMM's epilogue calls that follow
    it on its output are then answered by that output, which already holds them. route.json is
    one route ({"op", "epilogue"}, implemented by impl.py) or several ({"routes": [{"op",
    "epilogue", "impl"}, ...]}, one candidate replacing every match)."""

    impls: dict[str, object] = {}
    engaged = 0

    def __init__(self):
        super().__init__()
        route = json.loads((_HERE / "route.json").read_text())
        self.routes = [
            (r["op"], [e["fn"] for e in r.get("epilogue", [])], r.get("impl", "impl.py"))
            for r in route.get("routes", [route])
        ]
        for _, _, name in self.routes:
            if name not in Route.impls:
                Route.impls[name] = _load_impl(name)
        self._pending: dict[int, tuple[torch.Tensor, list[str]]] = {}
        self._gates: dict[int, tuple] = {}  # placeholder id -> (it, activation call, op, impl)
        self._convs: dict[int, tuple] = {}  # a convolution's output id -> (it, region, impl)

    def _gated(self, func, fn, args, kwargs):
        """A deferred op's fused result, or None after filling any placeholder the call reads."""
        held = [a for a in (*args, *kwargs.values()) if id(a) in self._gates]
        if len(held) == 1:
            ph = held[0]
            first_func, first_args, first_kwargs, extra, op, name = self._gates[id(ph)]
            ops = deferred_operands(op, first_args, extra, ph, fn, args, kwargs)
            out = None if ops is None else getattr(Route.impls[name], op)(*ops)
            if out is not None:
                self._gates.pop(id(ph))
                Route.engaged += 1
                if op in GEMMS and extra[0][1:]:  # the epilogue's later calls: answered
                    self._pending[id(out)] = (out, list(extra[0][1:]))
                return out
        for ph in held:  # any other use: the first call's real output, computed now
            first_func, first_args, first_kwargs, *_ = self._gates.pop(id(ph))
            with torch.no_grad():
                ph.copy_(first_func(*first_args, **first_kwargs))
        return None

    def _conv_region(self, fn, args):
        """The region's result when this call is its first on a convolution's output; any other
        reader finds that output as torch made it."""
        held = [a for a in args if isinstance(a, torch.Tensor) and id(a) in self._convs]
        for y in held:
            _, region, name = self._convs.pop(id(y))
            if fn == region[0] and args[0] is y:
                out = Route.impls[name].elementwise(y)
                if out is not None:
                    Route.engaged += 1
                    if region[1:]:
                        self._pending[id(out)] = (out, region[1:])
                    return out
        return None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        fn = getattr(func, "__name__", "")
        if self._gates and fn not in _META:
            out = self._gated(func, fn, args, kwargs)
            if out is not None:
                return out
        # An epilogue step reads the fused result, first or not (`g * sigmoid(g)`: mul(g, s)).
        held = next(
            (a for a in args if isinstance(a, torch.Tensor) and id(a) in self._pending), None
        )
        if held is not None:
            out, left = self._pending.pop(id(held))
            if out is held and left and fn == left[0]:
                if left[1:]:
                    self._pending[id(out)] = (out, left[1:])
                return out
        if self._convs and fn not in _META:
            out = self._conv_region(fn, args)
            if out is not None:
                return out
        for op, epilogue, name in self.routes:
            if op == "conv_epilogue" and fn in CONVS and epilogue:
                y = func(*args, **kwargs)  # torch's convolution; its region is the template's
                self._convs[id(y)] = (y, list(epilogue), name)
                return y
            extra = gate(op, fn, args, kwargs)
            if extra is not None:  # the product that reads it decides (see _gated)
                ph = _placeholder(fn, args)
                self._gates[id(ph)] = (func, args, kwargs, extra, op, name)
                return ph
            ops = operands(op, fn, args, kwargs)
            if ops is not None and op in GEMMS and epilogue:
                # deferred too: only a GEMM whose output meets the epilogue's first call gets
                # the fused kernel (another F.linear in the reference must not get the epilogue)
                ph = _placeholder(fn, args, kwargs)
                self._gates[id(ph)] = (func, args, kwargs, (list(epilogue), ops), op, name)
                return ph
            out = None if ops is None else getattr(Route.impls[name], op)(*ops)
            if out is None:
                continue
            Route.engaged += 1
            return out
        return func(*args, **kwargs)
