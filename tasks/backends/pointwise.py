"""Traced torch-level elementwise calls as Triton expressions of a running fp32 value `acc`.

A region of such calls (a GEMM's epilogue, or an elementwise-only reference) is compiled into one
template as one assignment per call, in trace order: the region is whatever the reference does
(`x * sigmoid(x)`, a hand-written tanh GELU), not a fixed list of fused activations. Each call's scalar arguments (a slope, a scale, clamp
bounds) are read from the trace and written into the expression; a call that reads a second
tensor, or an argument this table does not know, is not a step (the chain stops before it and
the rest stays torch).
"""

from __future__ import annotations

import math
import re

# Torch-level call names (functional, Tensor method and operator spellings) -> a canonical op.
_ALIASES = {
    "__mul__": "mul", "__rmul__": "mul", "multiply": "mul",
    "__add__": "add", "__radd__": "add", "__sub__": "sub", "__rsub__": "rsub", "subtract": "sub",
    "__truediv__": "div", "__rtruediv__": "rdiv", "true_divide": "div", "divide": "div",
    "__neg__": "neg", "negative": "neg", "clip": "clamp", "__pow__": "pow", "__abs__": "abs",
    "hardtanh_": "hardtanh", "relu_": "relu", "clamp_min": "clamp_min", "clamp_max": "clamp_max",
}  # fmt: skip
_SQRT1_2 = 0.7071067811865476
_SOFTPLUS = "tl.where({b} * acc > {t}, acc, tl.log(1.0 + tl.exp({b} * acc)) / {b})"
_TANH = "(2.0 * tl.sigmoid(2.0 * ({x})) - 1.0)"
# Unary calls with no argument that changes them: canonical name -> expression of acc.
_UNARY = {
    "relu": "tl.maximum(acc, 0.0)",
    "sigmoid": "tl.sigmoid(acc)",
    "tanh": _TANH.format(x="acc"),
    "silu": "acc * tl.sigmoid(acc)",
    "mish": "acc * " + _TANH.format(x=_SOFTPLUS.format(b=1.0, t=20.0)),
    "hardswish": "acc * tl.minimum(tl.maximum(acc + 3.0, 0.0), 6.0) / 6.0",
    "hardsigmoid": "tl.minimum(tl.maximum(acc + 3.0, 0.0), 6.0) / 6.0",
    "relu6": "tl.minimum(tl.maximum(acc, 0.0), 6.0)",
    "softsign": "acc / (1.0 + tl.abs(acc))",
    "exp": "tl.exp(acc)",
    "log": "tl.log(acc)",
    "abs": "tl.abs(acc)",
    "neg": "-acc",
    "sqrt": "tl.sqrt(acc)",
    "rsqrt": "1.0 / tl.sqrt(acc)",
    "erf": "tl.erf(acc)",
    "tanhshrink": "acc - " + _TANH.format(x="acc"),
    "selu": "1.0507009873554805 * tl.where(acc > 0.0, acc, "
    "1.6732632423543772 * (tl.exp(acc) - 1.0))",
}


def _scalar(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _arg(call: dict, i: int, name: str, default=None):
    args, kwargs = call["args"], call["kwargs"]
    return args[i] if len(args) > i else kwargs.get(name, default)


def _operand(v, env: dict[str, str]) -> str | None:
    """A call argument as a Triton operand: a traced tensor of the region by its variable, a
    finite number as a literal, else None."""
    if isinstance(v, dict):
        return env.get(v.get("t"))
    return repr(float(v)) if _scalar(v) else None


def step(call: dict, env: dict[str, str], extras: list[str] | None = None) -> str | None:
    """The Triton expression of `call` over the region's values (`env`: trace label -> variable),
    or None when the call is not an elementwise step of them (another tensor, an argument this
    table does not know). `extras`, when given (empty), lets a binary call read one more tensor,
    an input or a parameter (`x + self.bias`): it is the template's `x0`, loaded broadcast to
    the output's index, and its label is appended to `extras`."""
    fn = call["fn"]
    name = _ALIASES.get(fn, fn)
    args, kwargs = call["args"], call["kwargs"]
    if name in ("mul", "add", "sub", "div", "rsub", "rdiv", "pow", "maximum", "minimum"):
        key = "exponent" if name == "pow" else "other"
        if len(args) < 1 or kwargs.get("alpha", 1) != 1 or set(kwargs) - {key, "alpha"}:
            return None
        env = _with_extra(env, [args[0], _arg(call, 1, key)], extras) if name != "pow" else env
        a, b = _operand(args[0], env), _operand(_arg(call, 1, key), env)
        if a is None or b is None or (a not in env.values() and b not in env.values()):
            return None
        if name == "pow":  # small integer powers as products (tl has no general pow)
            if b in ("1.0", "2.0", "3.0", "4.0"):
                return " * ".join([a] * int(float(b)))
            return f"tl.sqrt({a})" if b == "0.5" else None
        if name in ("maximum", "minimum"):
            return f"tl.{name}({a}, {b})"
        op = {"mul": "{a} * {b}", "add": "{a} + {b}", "sub": "{a} - {b}", "div": "{a} / {b}",
              "rsub": "{b} - {a}", "rdiv": "{b} / {a}"}[name]  # fmt: skip
        return "(" + op.format(a=a, b=b) + ")"
    if not args or not isinstance(args[0], dict) or args[0].get("t") not in env:
        return None
    if any(isinstance(v, dict) for v in list(args[1:]) + list(kwargs.values())):
        return None  # a second tensor that is not the region's: not a step
    x = env[args[0]["t"]]
    expr = _unary(call, name)
    return None if expr is None else "(" + expr.replace("acc", x) + ")"


def _with_extra(env: dict[str, str], operands: list, extras: list[str] | None) -> dict[str, str]:
    """env with x0 for an input or parameter operand that is not the region's, when one may be
    read (`extras` given and empty) and the other operand is the region's."""
    labels = [v.get("t") for v in operands if isinstance(v, dict)]
    outside = [t for t in labels if t not in env]
    if extras is None or extras or len(outside) != 1 or len(labels) != 2:
        return env
    if not (outside[0].startswith("in") or outside[0].startswith("p:")):
        return env
    extras.append(outside[0])
    return {**env, outside[0]: "x0"}


def _unary(call: dict, name: str) -> str | None:
    """The expression of a one-tensor call, of `acc`."""
    args = call["args"]
    if name in _UNARY:
        extra = [k for k in call["kwargs"] if k != "inplace"]
        return _UNARY[name] if len(args) == 1 and not extra else None
    if name == "gelu":
        approximate = _arg(call, 1, "approximate", "none")
        if approximate == "tanh":
            inner = "1.5957691216057308 * (acc + 0.044715 * acc * acc * acc)"
            return f"acc * tl.sigmoid({inner})"
        return f"0.5 * acc * (1.0 + tl.erf(acc * {_SQRT1_2}))" if approximate == "none" else None
    if name == "leaky_relu":
        slope = _arg(call, 1, "negative_slope", 0.01)
        return f"tl.where(acc >= 0.0, acc, acc * {float(slope)!r})" if _scalar(slope) else None
    if name == "elu":
        alpha = _arg(call, 1, "alpha", 1.0)
        ok = _scalar(alpha) and set(call["kwargs"]) <= {"alpha", "inplace"}
        return f"tl.where(acc > 0.0, acc, {float(alpha)!r} * (tl.exp(acc) - 1.0))" if ok else None
    if name == "softplus":
        beta, threshold = _arg(call, 1, "beta", 1.0), _arg(call, 2, "threshold", 20.0)
        if not (_scalar(beta) and _scalar(threshold)) or beta <= 0:
            return None
        return _SOFTPLUS.format(b=float(beta), t=float(threshold))
    if name in ("hardtanh", "clamp", "clamp_min", "clamp_max"):
        if name == "hardtanh":
            lo, hi = _arg(call, 1, "min_val", -1.0), _arg(call, 2, "max_val", 1.0)
        elif name == "clamp":
            lo, hi = _arg(call, 1, "min"), _arg(call, 2, "max")
        elif name == "clamp_min":
            lo, hi = _arg(call, 1, "min"), None
        else:
            lo, hi = None, _arg(call, 1, "max")
        if any(v is not None and not _scalar(v) for v in (lo, hi)) or lo is hi is None:
            return None
        expr = f"tl.maximum(acc, {float(lo)!r})" if lo is not None else "acc"
        return f"tl.minimum({expr}, {float(hi)!r})" if hi is not None else expr
    return None


def region(
    calls: list[dict],
    start: int,
    root: str,
    outputs: list[str],
    chained: bool = True,
    extra: bool = False,
) -> list[dict]:
    """The elementwise calls from `start` on that read only `root` (the value a GEMM or the
    reference's input gives), values they made, and numbers: [{"fn", "line", "out"}], each line
    `vJ = <expr>` of v0 (root) and earlier values. It ends at the first call that is not such a
    step; what it keeps ends with a value no call after it and no output but the last reads
    (every value before the last lives in registers only). `chained`: each step reads the one
    before it (`g * sigmoid(g)` is, `relu(g) * sigmoid(g)` is not), as a route needs (it answers
    each later call by the one result, op_route.py). `extra`: the first step may read one more
    tensor (an input or parameter, as `x0`; its step says so under "reads"), which the route
    hands to the template with the GEMM's or convolution's operands."""
    env, steps = {root: "v0"}, []
    for c in calls[start:]:
        if not c["out"]:
            break
        extras = [] if extra and not steps else None
        expr = step(c, env, extras)
        if expr is None or (chained and not re.search(rf"\bv{len(steps)}\b", expr)):
            break
        var = f"v{len(steps) + 1}"
        steps.append({"fn": c["fn"], "line": f"{var} = {expr}", "out": c["out"][0]})
        if extras:
            steps[-1]["reads"] = extras
            env[extras[0]] = "x0"
        env[c["out"][0]] = var
    while steps and not _closed(calls, start, steps, root, outputs):
        steps.pop()
    return steps


def _closed(calls, start, steps, root, outputs) -> bool:
    """Whether only the last step's value is read after the region (or is an output)."""
    made = {root} | {s["out"] for s in steps[:-1]}
    after = calls[start + len(steps) :]
    for c in after:
        for a in list(c["args"]) + list(c["kwargs"].values()):
            for v in a if isinstance(a, list) else [a]:
                if isinstance(v, dict) and v.get("t") in made:
                    return False
    return not (made & set(outputs))


def statements(steps: list[dict]) -> list[str]:
    """A region's template lines: v0 from the accumulator, the steps, the result back."""
    if not steps:
        return []
    return ["v0 = acc", *(s["line"] for s in steps), f"acc = v{len(steps)}"]
