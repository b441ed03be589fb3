"""Matching a traced reference (tasks/backends/trace.py) against the op classes that templates and
libraries cover, without a model: pure reads of the trace's JSON.

Two kinds of match. A *routed* match is a torch-level call (`F.softmax`, `F.layer_norm`,
`F.linear` followed by its activation, `Tensor.sum(dim)`, ...) that a candidate intercepts
(tasks/backends/op_route.py) while the rest of the reference stays torch. A *whole* match is a
hand-written pattern in the aten graph (an RMSNorm spelt pow/mean/add/rsqrt/mul) that makes up
the entire reference: the candidate is then the template called on the reference's inputs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from kernel_bakeoff.tasks.backends import pointwise

# Torch-level GEMM calls the batched GEMM template takes (its operands' shapes: _matmul_why).
MATMULS = ("matmul", "mm", "bmm", "__matmul__")
# Convolutions: the conv template (its epilogue fused), or torch's (cuDNN's) with the
# elementwise region after it as one kernel.
CONVS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
# Pooling over 1-3 trailing dims: the pool template.
POOLS = tuple(f"{k}_pool{d}d" for k in ("max", "avg") for d in (1, 2, 3))
FLOAT_DTYPES = ("float32", "float16", "bfloat16")
REDUCTIONS = ("sum", "mean", "amax", "amin", "prod", "argmax", "argmin")
# Gated activations: act(a) * b, the op class named after its activation (SwiGLU, GeGLU).
GATES = {"silu": "swiglu", "gelu": "geglu"}
MULS = ("mul", "__mul__", "__rmul__")


@dataclass
class Match:
    op: str  # softmax, log_softmax, layer_norm, rms_norm, cross_entropy, linear, sum, cumsum...
    how: str  # "route" or "whole"
    dtype: str
    shapes: dict[str, list[int]]  # workload -> shape of the tensor the op reads first
    reads: list[str]  # trace labels: in0.. inputs, p:name parameters, c<i> intermediates
    params: dict = field(default_factory=dict)  # eps, epilogue, reduction, has_weight, ...

    @property
    def label(self) -> str:
        extra = "+".join(e["fn"] for e in self.params.get("epilogue", []))
        return self.op + (f"+{extra}" if extra else "")

    def as_dict(self) -> dict:
        return {**asdict(self), "label": self.label}


def _tensor(a) -> str | None:
    return a["t"] if isinstance(a, dict) and "t" in a else None


def _arg(call, i, name, default=None):
    args, kwargs = call["args"], call["kwargs"]
    return args[i] if len(args) > i else kwargs.get(name, default)


def _uses(calls: list[dict], label: str) -> int:
    n = 0
    for c in calls:
        for a in list(c["args"]) + list(c["kwargs"].values()):
            n += sum(1 for v in (a if isinstance(a, list) else [a]) if _tensor(v) == label)
    return n


def _last_dim(dim, ndim: int) -> bool:
    if isinstance(dim, list) and len(dim) == 1:
        dim = dim[0]
    return isinstance(dim, int) and dim % max(ndim, 1) == ndim - 1


def _route_match(
    calls: list[dict], i: int, outputs: list[str]
) -> tuple[dict | list | None, str | None]:
    """(match fields, None) for call i (a list of them for a convolution: two ways to take it),
    or (None, why not) when it is an op class we know."""
    c = calls[i]
    fn, x = c["fn"], _tensor(c["args"][0]) if c["args"] else None
    desc = c["out_desc"][0] if c["out_desc"] else None
    if x is None or desc is None:
        return None, None
    if fn in ("softmax", "log_softmax", "cumsum"):
        dim = _arg(c, 1, "dim")
        if fn != "cumsum" and isinstance(dim, int) and not _last_dim(dim, len(desc["shape"])):
            # over an inner dim (a conv output's channels): columns, not rows
            return {"op": f"{fn}_dim", "reads": [x], "params": {"dim": dim}}, None
        if not _last_dim(dim, len(desc["shape"])):
            return None, f"{fn} over dim {dim}, not the last"
        return {"op": fn, "reads": [x], "params": {"dim": -1}}, None
    if fn in ("layer_norm", "rms_norm"):
        shape = _arg(c, 1, "normalized_shape")
        shape = [shape] if isinstance(shape, int) else shape
        if not isinstance(shape, list) or not shape or not all(isinstance(d, int) for d in shape):
            return None, f"{fn} over {shape}: not a list of trailing dimensions"
        weight, bias = _arg(c, 2, "weight"), _arg(c, 3, "bias") if fn == "layer_norm" else None
        eps = _arg(c, 4 if fn == "layer_norm" else 3, "eps")
        reads = [x] + [t for t in (_tensor(weight), _tensor(bias)) if t]
        params = {"eps": eps, "has_weight": _tensor(weight) is not None, "row": math.prod(shape)}
        if fn == "layer_norm":
            params["has_bias"] = _tensor(bias) is not None
        return {"op": fn, "reads": reads, "params": params}, None
    if fn == "batch_norm":
        w, b = _tensor(_arg(c, 3, "weight")), _tensor(_arg(c, 4, "bias"))
        training = bool(_arg(c, 5, "training", False))
        params = {"eps": _arg(c, 7, "eps", 1e-5), "training": training, "has_weight": w is not None}
        return {"op": "batch_norm", "reads": [x] + [t for t in (w, b) if t], "params": params}, None
    if fn in ("group_norm", "instance_norm"):
        return _channel_norm(c, x, desc["shape"])
    if fn == "cross_entropy":
        if len(desc["shape"]) != 0 and _arg(c, 6, "reduction", "mean") != "none":
            return None, None
        if _arg(c, 2, "weight") is not None or _arg(c, 7, "label_smoothing", 0.0):
            return None, "cross_entropy with class weights or label smoothing"
        return {"op": "cross_entropy", "reads": [x, _tensor(c["args"][1])],
                "params": {"reduction": _arg(c, 6, "reduction", "mean")}}, None  # fmt: skip
    if fn == "linear":
        epilogue = _epilogue(calls, i, outputs, extra=True)
        w, b = _tensor(c["args"][1]), _tensor(_arg(c, 2, "bias"))
        return {"op": "linear", "reads": [x, w] + ([b] if b else []) + _extras(epilogue),
                "params": {"epilogue": epilogue, "has_bias": b is not None}}, None  # fmt: skip
    if fn in CONVS:
        return _conv(c, x, calls, i, outputs)
    if fn in POOLS:
        if fn.startswith("max") and _arg(c, 6, "return_indices", False):
            return None, f"{fn} returning indices: the template returns values only"
        return {"op": "pool", "reads": [x], "params": {"fn": fn}}, None
    if fn in MATMULS:
        y = _tensor(_arg(c, 1, "other", _arg(c, 1, "mat2")))
        shapes = [_shape_of(calls, t, c) for t in (x, y)]
        why = _matmul_why(shapes)
        if why:
            return None, f"{fn} of {shapes[0]} and {shapes[1]}: {why}"
        epilogue = _epilogue(calls, i, outputs, extra=True)
        return {"op": "matmul", "reads": [x, y] + _extras(epilogue),
                "params": {"epilogue": epilogue, "fn": fn}}, None  # fmt: skip
    if fn == "scaled_dot_product_attention":
        if _arg(c, 3, "attn_mask") is not None or _arg(c, 4, "dropout_p", 0.0):
            return None, "attention with a mask or dropout: the template takes neither"
        if len(desc["shape"]) != 4 or _arg(c, 7, "enable_gqa", False):
            return None, "attention not on [batch, heads, seq, dim] of equal heads"
        reads = [x, _tensor(_arg(c, 1, "key")), _tensor(_arg(c, 2, "value"))]
        return {"op": fn, "reads": reads, "params": {"is_causal": bool(_arg(c, 5, "is_causal", False))}}, None  # fmt: skip
    if fn in GATES:
        return _gated(calls, i, outputs)
    if fn in ("max", "min") and isinstance(_arg(c, 1, "dim"), int) and len(c["out"]) == 2:
        # torch.max(x, dim): (values, indices); torch.max(a, b) is elementwise, not this
        keepdim = bool(_arg(c, 2, "keepdim", False))
        return {"op": f"{fn}_dim", "reads": [x], "params": {"dim": _arg(c, 1, "dim"), "keepdim": keepdim}}, None  # fmt: skip
    if fn in REDUCTIONS:
        dim = _arg(c, 1, "dim")
        if dim is None or (isinstance(dim, list) and len(dim) != 1):
            return None, f"{fn} over {'all elements' if dim is None else dim}: one dim only"
        dim = dim[0] if isinstance(dim, list) else dim
        return {"op": fn, "reads": [x], "params": {"dim": dim, "keepdim": bool(_arg(c, 2, "keepdim", False))}}, None  # fmt: skip
    return None, None


def _conv(c: dict, x: str, calls: list[dict], i: int, outputs: list[str]) -> tuple[list, None]:
    """A convolution: the conv template with the elementwise region after it fused ("conv"),
    and when there is such a region, torch's convolution with that region as one kernel
    ("conv_epilogue")."""
    fn, transposed = c["fn"], "transpose" in c["fn"]
    epilogue, alone = _epilogue(calls, i, outputs, extra=True), _epilogue(calls, i, outputs)
    groups = _arg(c, 6, "groups", 1)  # the 7th argument of both signatures
    w, b = _tensor(_arg(c, 1, "weight")), _tensor(_arg(c, 2, "bias"))
    cout = c["out_desc"][0]["shape"][1] if len(c["out_desc"][0]["shape"]) > 1 else 0
    params = {"epilogue": epilogue, "fn": fn, "transposed": transposed, "has_bias": b is not None,
              "out_per_group": cout // groups if isinstance(groups, int) and groups else cout}  # fmt: skip
    found = [{"op": "conv", "reads": [x, w] + ([b] if b else []) + _extras(epilogue), "params": params}]  # fmt: skip
    if alone:  # the region as the pointwise template takes it: of the convolution's output only
        found.append({"op": "conv_epilogue", "reads": [x], "params": {"epilogue": alone, "fn": fn}})  # fmt: skip
    return found, None


def _channel_norm(c: dict, x: str, shape: list[int]) -> tuple[dict | None, str | None]:
    """GroupNorm (each sample's group of channels a row) and InstanceNorm (each sample's
    channel a row, statistics of the input): the norm template over those rows."""
    fn = c["fn"]
    if fn == "group_norm":
        groups, w, b = _arg(c, 1, "num_groups"), _arg(c, 2, "weight"), _arg(c, 3, "bias")
        eps = _arg(c, 4, "eps", 1e-5)
        if not isinstance(groups, int) or len(shape) < 2 or shape[1] % groups:
            return None, f"group_norm of {shape} in {groups} groups"
        row = shape[1] // groups * math.prod(shape[2:])
    else:
        w, b, eps = _arg(c, 3, "weight"), _arg(c, 4, "bias"), _arg(c, 7, "eps", 1e-5)
        if not _arg(c, 5, "use_input_stats", True) or len(shape) < 3:
            return None, "instance_norm with running statistics: not the template's"
        row = math.prod(shape[2:])
    reads = [x] + [t for t in (_tensor(w), _tensor(b)) if t]
    params = {"eps": eps, "has_weight": _tensor(w) is not None, "row": row}
    return {"op": fn, "reads": reads, "params": params}, None


def _epilogue(calls: list[dict], i: int, outputs: list[str], extra: bool = False) -> list[dict]:
    """The elementwise region that follows call i on its output, as template steps; `extra`:
    its first step may read one more tensor (a GEMM's or convolution's template loads it)."""
    steps = pointwise.region(calls, i + 1, calls[i]["out"][0], outputs, extra=extra)
    return [{k: s[k] for k in ("fn", "line", "reads") if k in s} for s in steps]


def _extras(epilogue: list[dict]) -> list[str]:
    return [t for e in epilogue for t in e.get("reads", [])]


def _elementwise_whole(calls: list[dict], outputs: list[str]) -> tuple[dict | None, str | None]:
    """A reference that is one elementwise region of one input (relu, `x * sigmoid(x)`, a
    hand-written GELU): (the match, None), or (None, why not) when it starts as one."""
    work = [j for j, c in enumerate(calls) if not c["fn"].startswith("_")]  # not grad mode
    if not work or len(outputs) != 1:
        return None, None
    head = calls[work[0]]
    root = next((a["t"] for a in head["args"] if isinstance(a, dict) and "t" in a), None)
    if root is None or not root.startswith("in") or pointwise.step(head, {root: "v0"}) is None:
        return None, None
    steps = pointwise.region(calls, work[0], root, [], chained=False)
    if len(steps) != len(work) or steps[-1]["out"] != outputs[0]:
        stop = calls[work[len(steps)]]["fn"] if len(steps) < len(work) else "an output"
        return None, f"elementwise {'+'.join(s['fn'] for s in steps)} up to {stop}, not the whole"
    lines = [{"fn": s["fn"], "line": s["line"]} for s in steps]
    return {"op": "elementwise", "reads": [root], "params": {"epilogue": lines}}, None


def _shape_of(calls: list[dict], label: str | None, before: dict) -> list[int] | None:
    """The shape of a traced tensor from the call log (its producer's out_desc), or None for an
    input or parameter (their shapes are the workload's, read in `find`)."""
    for c in calls:
        if c is before:
            break
        if label in c["out"]:
            return c["out_desc"][c["out"].index(label)]["shape"]
    return None


def _matmul_why(shapes: list) -> str | None:
    """None when the batched GEMM template takes operands of these shapes (None: an input,
    checked by the template at run time), else why not."""
    known = [s for s in shapes if s is not None]
    if any(len(s) < 2 for s in known):
        return "a vector operand (the template takes matrices and batches of them)"
    if any(len(s) > 3 for s in known[1:]):
        return "a batched right operand of more than 3 dims"
    return None


def _gated(calls: list[dict], i: int, outputs: list[str]) -> tuple[dict | None, str | None]:
    """silu(a) * b or gelu(a) * b (b of a's shape: a second projection, or the other half of a
    chunk): the activation's output read once, by that product and nothing else."""
    c, gate = calls[i], calls[i]["out"][0]
    if c["fn"] == "silu" and _arg(c, 1, "inplace", False):
        return None, None
    if _uses(calls, gate) != 1 or gate in outputs:
        return None, None
    mul = next((n for n in calls[i + 1 :] if _uses([n], gate)), None)
    if mul is None or mul["fn"] not in MULS or mul["kwargs"] or len(mul["args"]) != 2:
        return None, None
    other = [_tensor(a) for a in mul["args"] if _tensor(a) != gate]
    if (
        len(other) != 1
        or other[0] is None
        or mul["out_desc"][0]["shape"] != c["out_desc"][0]["shape"]
    ):
        return None, f"{c['fn']}(a) * b with b broadcast or not a tensor: not a gated activation"
    params = {"approximate": _arg(c, 1, "approximate", "none")} if c["fn"] == "gelu" else {}
    return {
        "op": GATES[c["fn"]],
        "reads": [_tensor(c["args"][0]), other[0]],
        "params": params,
    }, None


def _linear_ce(calls: list[dict], outputs: list[str]) -> list[dict]:
    """cross_entropy(linear(x, w[, b]), target) with the logits read by nothing else: one op a
    fused kernel computes without writing the logits (Liger's fused linear + cross-entropy)."""
    found = []
    for c in calls:
        if c["fn"] != "cross_entropy" or len(c["args"]) < 2:
            continue
        logits = _tensor(c["args"][0])
        lin = next((p for p in calls if p["fn"] == "linear" and logits in p["out"]), None)
        if lin is None or _uses(calls, logits) != 1 or logits in outputs:
            continue
        plain = _arg(c, 2, "weight") is None and not _arg(c, 7, "label_smoothing", 0.0)
        if not plain or _arg(c, 4, "ignore_index", -100) != -100:
            continue
        x, w, b = _tensor(lin["args"][0]), _tensor(lin["args"][1]), _tensor(_arg(lin, 2, "bias"))
        reads = [x, w] + ([b] if b else []) + [_tensor(c["args"][1])]
        reduction = _arg(c, 6, "reduction", "mean")
        found.append({"op": "linear_cross_entropy", "reads": reads,
                      "params": {"reduction": reduction, "has_bias": b is not None}})  # fmt: skip
    return found


def _rms_whole(aten: list[dict]) -> dict | None:
    """pow(x, 2) -> mean(last, keepdim) -> add(eps) -> rsqrt -> mul(x) [-> mul(w)] as the graph."""
    ops = [n for n in aten if n["op"] == "call_function"]
    names = [
        n["target"].split(".")[1] if n["target"].startswith("aten.") else n["target"] for n in ops
    ]
    if names[:5] != ["pow", "mean", "add", "rsqrt", "mul"] or len(ops) not in (5, 6):
        return None
    if len(ops) == 6 and names[5] != "mul":
        return None
    pow_, mean, add, _, mul = ops[:5]
    x = pow_["args"][0]
    if pow_["args"][1] != 2 or not _last_dim(mean["args"][1], len(x and pow_["shape"])):
        return None
    if not (len(mean["args"]) > 2 and mean["args"][2]) or not isinstance(add["args"][1], float):
        return None
    if x not in mul["args"]:
        return None
    by_name = {n["name"]: n for n in aten}
    reads = [by_name[x["n"]].get("input")]
    if len(ops) == 6:
        other = [a for a in ops[5]["args"] if a != {"n": mul["name"]}]
        if (
            len(other) != 1
            or not isinstance(other[0], dict)
            or "input" not in by_name[other[0]["n"]]
        ):
            return None
        reads.append(by_name[other[0]["n"]]["input"])
    if None in reads:
        return None
    return {
        "op": "rms_norm",
        "reads": reads,
        "params": {"eps": add["args"][1], "has_weight": len(reads) == 2},
    }


def find(trace: dict) -> tuple[list[Match], list[str]]:
    """The matches on the first traced workload (with every workload's shapes), and notes on what
    was seen but not matched (or why nothing was)."""
    loads = {n: w for n, w in trace.get("workloads", {}).items() if "calls" in w}
    if not loads:
        errors = [w.get("error", "") for w in trace.get("workloads", {}).values()]
        return [], [
            f"could not trace the reference on the meta device: {errors[0] if errors else 'no workloads'}"
        ]
    first = next(iter(loads.values()))
    calls, outputs, found, notes = first["calls"], first["outputs"], [], []
    for i, _ in enumerate(calls):
        fields, why = _route_match(calls, i, outputs)
        if why:
            notes.append(why)
        for f in fields if isinstance(fields, list) else [fields] if fields else []:
            found.append((f, i, "route"))
    found += [(f, None, "route") for f in _linear_ce(calls, outputs)]
    whole = _rms_whole(first.get("aten", []))
    if not found and not whole:
        whole, why = _elementwise_whole(calls, outputs)
        notes += [why] if why else []
    if whole:  # the whole graph is the op: its parts (the mean inside) are not matches
        found = [(whole, None, "whole")]
    matches = []
    for fields, i, how in found:
        descs = {n: _desc_of(w, fields["reads"][0]) for n, w in loads.items()}
        if i is not None and not all(descs.values()):  # an unlabeled operand (A.T: a property)
            descs = {n: w["calls"][i]["out_desc"][0] for n, w in loads.items()}
        if fields["op"] in GATES.values() and not _same_shape(loads, fields["reads"]):
            notes.append(f"{fields['op']}: its two operands differ in shape (a broadcast)")
            continue
        shapes = {n: d["shape"] for n, d in descs.items() if d}
        dtype = next((d["dtype"] for d in descs.values() if d), None)
        if dtype not in FLOAT_DTYPES:
            notes.append(
                f"{fields['op']} in {dtype}: the templates take float32, float16, bfloat16"
            )
            continue
        matches.append(Match(fields["op"], how, dtype, shapes, fields["reads"], fields["params"]))
    if not matches and not notes:
        seen = sorted({c["fn"] for c in calls if not c["fn"].startswith("_")})
        notes.append(f"no op class matched (calls seen: {', '.join(seen[:8]) or 'none'})")
    return matches, notes


def _same_shape(loads: dict, reads: list[str]) -> bool:
    for w in loads.values():
        a, b = (_desc_of(w, r) for r in reads)
        if a is None or b is None or (a["shape"], a["dtype"]) != (b["shape"], b["dtype"]):
            return False
    return True


def _desc_of(workload: dict, label: str) -> dict | None:
    """Shape and dtype of a traced tensor: an input, or the output of a logged call."""
    if label.startswith("in"):
        return workload["inputs"][int(label[2:])]
    for c in workload["calls"]:
        if label in c["out"]:
            return c["out_desc"][c["out"].index(label)]
    return None
