"""Parameterised Triton kernel templates (templates/kernels/*.py.j2), rendered from a traced match
(tasks/backends/match.py), each with a configuration space the search lanes tune.

A rendered template is `impl.py` under op_route's canonical names; the candidate is the reference
with the matched op routed to it (the rest stays torch), or, for a hand-written pattern that is
the whole reference, the template called on the reference's inputs. Either way the harness
checks it like every other candidate.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path

import jinja2

from kernel_bakeoff.tasks.backends import pointwise, wrappers
from kernel_bakeoff.tasks.backends.base import BuildContext, write_candidate
from kernel_bakeoff.tasks.backends.match import Match
from kernel_bakeoff.tasks.models.plan import CandidateRef
from kernel_bakeoff.tasks.search.space import Param, Space, Tunable, key

ROUTE = Path(__file__).with_name("op_route.py")
# Kernels are code: rendered with no filters of the report's (tasks/report/render.py), in the
# same whitespace rules, so the report's environment is not the backends' to load
_KERNELS = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parents[2] / "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
)
TEMPLATE = {
    "softmax": "rowwise.py.j2",
    "log_softmax": "rowwise.py.j2",
    "cross_entropy": "rowwise.py.j2",
    "layer_norm": "norm.py.j2",
    "rms_norm": "norm.py.j2",
    "group_norm": "norm.py.j2",
    "batch_norm": "batch_norm.py.j2",
    "instance_norm": "norm.py.j2",
    "linear": "linear.py.j2",
    "matmul": "gemm.py.j2",
    "elementwise": "pointwise.py.j2",
    "conv_epilogue": "pointwise.py.j2",
    "conv": "conv.py.j2",
    "pool": "pool.py.j2",
    "sum": "reduce.py.j2",
    "mean": "reduce.py.j2",
    "amax": "reduce.py.j2",
    "amin": "reduce.py.j2",
    "prod": "reduce.py.j2",
    "argmax": "reduce.py.j2",
    "argmin": "reduce.py.j2",
    "max_dim": "reduce.py.j2",
    "min_dim": "reduce.py.j2",
    "cumsum": "scan.py.j2",
    "softmax_dim": "softmax_dim.py.j2",
    "log_softmax_dim": "softmax_dim.py.j2",
    "scaled_dot_product_attention": "attention.py.j2",
    "swiglu": "gated.py.j2",
    "geglu": "gated.py.j2",
}
# Triton expressions of the epilogues a GEMM template fuses (acc: the fp32 accumulator).
_EPILOGUE = {
    "relu": "tl.maximum(acc, 0.0)",
    "gelu": "0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))",
    "gelu_tanh": "acc * tl.sigmoid(1.5957691216057308 * (acc + 0.044715 * acc * acc * acc))",
    "sigmoid": "tl.sigmoid(acc)",
    "tanh": "2.0 * tl.sigmoid(2.0 * acc) - 1.0",
    "silu": "acc * tl.sigmoid(acc)",
}
ROW_LIMIT = 32768  # widest row a "row" (in-registers) variant holds
# NVIDIA only (what benchmarks/sm90_preflight.md measured on sm_90; other vendors' configs are
# not pruned by these): the shared memory a block may use, an H100's 227 KB, of which Triton
# took up to 32 KB beyond shared_bytes' operand tiles (an epilogue's layout conversion), and
# the fp32 accumulator registers a thread (of 255) beyond which a tile always spills.
SHARED_LIMIT = 227 * 1024
SHARED_SLACK = 32 * 1024
ACC_LIMIT = 128


def shared_bytes(match: Match, c: dict) -> int:
    """Shared memory the template's pipelined tiles take at config `c` (0: it stages none)."""
    size = 4 if match.dtype == "float32" else 2
    if match.op in ("linear", "matmul"):  # A and B tiles a stage
        return size * c["num_stages"] * (c["BLOCK_K"] * (c["BLOCK_M"] + c["BLOCK_N"]))
    if match.op == "scaled_dot_product_attention":  # Q twice, K and V a stage each
        d = _block_d(match)
        return size * d * 2 * (c["BLOCK_M"] + c["num_stages"] * c["BLOCK_N"])
    return 0


def _too_big(match: Match, c: dict, vendor: str, acc: int) -> str | None:
    """Why config `c` does not fit: its shared memory, or `acc` fp32 accumulator elements over
    its warps."""
    if vendor != "nvidia":
        return None
    shared, most = shared_bytes(match, c), SHARED_LIMIT - SHARED_SLACK
    if shared > most:
        return f"{shared // 1024} KB of shared memory (at most {most // 1024} KB)"
    if acc > ACC_LIMIT * 32 * c["num_warps"]:
        return f"an accumulator of {acc // (32 * c['num_warps'])} registers a thread"
    return None


def _block_d(match: Match) -> int:
    """The attention template's BLOCK_D: the head dim to a power of two, at least 16."""
    return max(16, 1 << (_widest(match) - 1).bit_length())


def _widest(match: Match) -> int:
    """The longest row the op reads: a norm's over several trailing dims is their product."""
    if "row" in match.params:
        return match.params["row"]
    return max((s[-1] for s in match.shapes.values() if s), default=1)


def space(match: Match, vendor: str = "nvidia") -> tuple[Space, dict]:
    """The configuration space of the match's template on this vendor, and its default point."""
    warps, stages = Param("num_warps", (1, 2, 4, 8, 16)), Param("num_stages", (1, 2, 3, 4))
    n = _widest(match)
    rows = ("softmax", "log_softmax", "cross_entropy", "cumsum")
    if match.op in rows + ("layer_norm", "rms_norm", "group_norm", "instance_norm"):
        rowwise = match.op in ("softmax", "log_softmax", "cross_entropy")
        passes = (
            # cross_entropy's program writes its row's loss from the row's whole max and sum:
            # not split, so "split" is not a point of its space
            ("row", "online", "max_sum") + (() if match.op == "cross_entropy" else ("split",))
            if rowwise
            else ("row", "chunked")
            if match.op == "cumsum"
            else ("row", "looped", "split")
        )
        params = [Param("passes", passes), Param("BLOCK_N", (256, 512, 1024, 2048, 4096)),
                  warps, stages, Param("persistent", (False, True))]  # fmt: skip
        split = "split" in passes
        if split:  # programs a row in the two-phase variant
            params.append(Param("SPLIT", (4, 16, 64, 256)))

        def rule(c):
            if c["passes"] == "row" and n > ROW_LIMIT:
                return f"a row of {n} does not fit in registers"
            if c["passes"] == "row" and c["BLOCK_N"] != 1024:
                return "the row variant takes the whole row: BLOCK_N is not its parameter"
            if split and c["passes"] != "split" and c["SPLIT"] != 16:
                return "SPLIT is the split variant's parameter"
            if c["passes"] == "split" and c["persistent"]:
                return "the split variant's grid is rows x SPLIT: persistent is not its parameter"
            return None

        one = n <= 8192
        default = {"passes": "row" if one else passes[1], "BLOCK_N": 1024,
                   "num_warps": 4 if n <= 1024 else 8 if n <= 4096 else 16, "num_stages": 1,
                   "persistent": False}  # fmt: skip
        if split:
            # few long rows (a LayerNorm of 16 rows of 4M, a softmax of 16 rows of 1M): one
            # program a row idles the GPU
            many = max((math.prod(s) // max(n, 1) for s in match.shapes.values() if s), default=1)
            few_long = many < 128 and n >= 65536
            default.update(
                passes="split" if few_long else default["passes"], SPLIT=64 if few_long else 16
            )
        return Space(params, rule), default
    if match.op in ("swiglu", "geglu"):  # elementwise: a tile of rows x columns a program
        params = [Param("BLOCK_M", (1, 2, 4, 8, 16)), Param("BLOCK_N", (128, 256, 512, 1024)),
                  Param("num_warps", (1, 2, 4, 8)), Param("num_stages", (1, 2))]  # fmt: skip

        def rule(c):
            return "tile over 8192 elements" if c["BLOCK_M"] * c["BLOCK_N"] > 8192 else None

        default = {"BLOCK_M": 4 if n <= 1024 else 1, "BLOCK_N": 1024 if n > 512 else 256,
                   "num_warps": 4, "num_stages": 1}  # fmt: skip
        return Space(params, rule), default
    precision = ("tf32x3", "ieee") if vendor == "nvidia" else ("ieee",)
    if match.op == "scaled_dot_product_attention":
        params = [Param("BLOCK_M", (16, 32, 64, 128)), Param("BLOCK_N", (16, 32, 64, 128)),
                  Param("num_warps", (4, 8)), Param("num_stages", (1, 2, 3)),
                  Param("precision", precision if match.dtype == "float32" else ("native",))]  # fmt: skip
        default = {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2,
                   "precision": params[-1].values[0]}  # fmt: skip
        d = _block_d(match)

        def rule(c):
            return _too_big(match, c, vendor, c["BLOCK_M"] * d)

        if default["precision"] == "tf32x3" and d == 128:
            # tf32x3 keeps three products' operands live: at head dim 128, 64x64 with 4 warps
            # spilled 796 B a thread (ptxas, sm_90) and ran 1.244 ms against compile's 0.796 on
            # an H100; 128x32 with 8 warps spills none (benchmarks/sm90_attention_grid.md)
            default.update(BLOCK_M=128, BLOCK_N=32, num_warps=8)
        for bn, stages in ((32, 2), (32, 1), (16, 1)):  # a head dim over 128: smaller K/V tiles
            if rule(default) is None:
                break
            default.update(BLOCK_N=bn, num_stages=stages)
        return Space(params, rule), default
    if match.op == "batch_norm":  # one program a channel, chunks of BLOCK
        params = [Param("BLOCK", (256, 512, 1024, 2048, 4096)), Param("num_warps", (1, 2, 4, 8, 16)),
                  Param("num_stages", (1, 2))]  # fmt: skip
        return Space(params), {"BLOCK": 1024, "num_warps": 4, "num_stages": 1}
    if match.op == "pool":  # BLOCK outputs a program, the window's taps unrolled
        params = [Param("BLOCK", (64, 128, 256, 512, 1024)), Param("num_warps", (1, 2, 4, 8)),
                  Param("num_stages", (1,))]  # fmt: skip
        return Space(params), {"BLOCK": 256, "num_warps": 4, "num_stages": 1}
    if match.op in ("elementwise", "conv_epilogue"):
        params = [Param("BLOCK", (256, 512, 1024, 2048, 4096)), Param("num_warps", (1, 2, 4, 8)),
                  Param("num_stages", (1,))]  # fmt: skip
        return Space(params), {"BLOCK": 1024, "num_warps": 4, "num_stages": 1}
    if match.op == "conv":  # implicit GEMM: output positions x a group's output channels
        params = [Param("BLOCK_M", (32, 64, 128)), Param("BLOCK_N", (16, 32, 64, 128)),
                  Param("BLOCK_K", (16, 32, 64)), Param("num_warps", (2, 4, 8)),
                  Param("num_stages", (1, 2, 3, 4)), Param("loop", ("flat", "taps")),
                  Param("precision", precision if match.dtype == "float32" else ("native",))]  # fmt: skip

        def rule(c):
            if c["BLOCK_M"] * c["BLOCK_N"] > 128 * 128:
                return "tile over 128x128"
            return _too_big(match, c, vendor, c["BLOCK_M"] * c["BLOCK_N"])

        co_g = match.params.get("out_per_group", 64)  # a depthwise conv has one a group
        default = {"BLOCK_M": 64, "BLOCK_N": 16 if co_g <= 16 else 32 if co_g <= 32 else 64,
                   "BLOCK_K": 32, "num_warps": 4, "num_stages": 2, "loop": "flat",
                   "precision": params[-1].values[0]}  # fmt: skip
        return Space(params, rule), default
    if match.op in ("linear", "matmul"):
        params = [Param("BLOCK_M", (32, 64, 128)), Param("BLOCK_N", (32, 64, 128, 256)),
                  Param("BLOCK_K", (16, 32, 64)), Param("GROUP_M", (1, 8)),
                  Param("num_warps", (4, 8)), Param("num_stages", (2, 3, 4)),
                  Param("precision", precision if match.dtype == "float32" else ("native",))]  # fmt: skip

        def rule(c):
            if c["BLOCK_M"] * c["BLOCK_N"] > 128 * 256:
                return "tile over 128x256"
            return _too_big(match, c, vendor, c["BLOCK_M"] * c["BLOCK_N"])

        default = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4,
                   "num_stages": 3, "precision": params[-1].values[0]}  # fmt: skip
        return Space(params, rule), default
    if match.op in ("softmax_dim", "log_softmax_dim"):  # R rows walked, BLOCK_I columns a program
        params = [Param("BLOCK_R", (4, 8, 16, 32)), Param("BLOCK_I", (32, 64, 128, 256)),
                  Param("num_warps", (1, 2, 4, 8)), stages]  # fmt: skip
        return Space(params), {"BLOCK_R": 8, "BLOCK_I": 128, "num_warps": 4, "num_stages": 1}
    params = [Param("BLOCK_R", (16, 64, 256, 1024)), Param("BLOCK_I", (1, 16, 64, 256)),
              Param("num_warps", (1, 2, 4, 8)), stages]  # fmt: skip

    def rule(c):
        return "tile over 16384 elements" if c["BLOCK_R"] * c["BLOCK_I"] > 16384 else None

    inner_one = match.params.get("dim", -1) in (-1, len(next(iter(match.shapes.values()), [0])) - 1)
    default = {"BLOCK_R": 1024 if inner_one else 16, "BLOCK_I": 1 if inner_one else 64,
               "num_warps": 4, "num_stages": 1}  # fmt: skip
    return Space(params, rule), default


def describe(who: str, match: Match, config: dict) -> str:
    """A candidate's origin: who proposed it, the template, the match and the configuration."""
    shown = ", ".join(f"{k}={v}" for k, v in config.items())
    return f"{who} {TEMPLATE[match.op]} ({match.label}; {shown})"


def epilogue_steps(match: Match) -> list[str]:
    """The template's epilogue statements over its fp32 accumulator `acc`: a traced elementwise
    region's lines (tasks/backends/pointwise.py), or one line per named activation."""
    epilogue = match.params.get("epilogue", [])
    if any("line" in e for e in epilogue):
        return pointwise.statements(epilogue)
    steps = []
    for e in epilogue:
        name = "gelu_tanh" if e.get("approximate") == "tanh" else e["fn"]
        steps.append(f"acc = {_EPILOGUE[name]}")
    return steps


def gate_step(match: Match) -> str | None:
    """A gated match's activation as a Triton expression of `acc` (the gate, fp32)."""
    if match.op not in ("swiglu", "geglu"):
        return None
    tanh = match.params.get("approximate") == "tanh"
    return _EPILOGUE["silu" if match.op == "swiglu" else "gelu_tanh" if tanh else "gelu"]


def render_impl(match: Match, config: dict) -> str:
    """impl.py for the match at one configuration point."""
    template = TEMPLATE[match.op]
    steps = epilogue_steps(match)
    return _KERNELS.get_template(f"kernels/{template}").render(
        template=template,
        op=match.op,
        dtype=match.dtype,
        config=config,
        config_repr=repr(config),
        epilogue=steps,
        activation=gate_step(match),
        approximate=match.params.get("approximate", "none"),
        epilogue_text=", ".join(e["fn"] for e in match.params.get("epilogue", [])) or "none",
        extras=sum(len(e.get("reads", [])) for e in match.params.get("epilogue", [])),
    )


def config_name(match: Match, config: dict) -> str:
    digest = hashlib.sha256((match.label + key(config)).encode()).hexdigest()[:8]
    return f"template-{match.label}-{digest}"


def _whole_wrapper(ctx: BuildContext, entry: str, match: Match, origin: str) -> str:
    """The template called on the reference's own inputs (a hand-written rms_norm graph, an
    elementwise-only reference)."""
    symbol, name = entry.partition(":")[2], ctx.candidate_symbol
    x, w = match.reads[0], (match.reads[1] if len(match.reads) > 1 else None)
    call = (
        f"_impl.elementwise(args[{x[2:]}])"
        if match.op == "elementwise"
        else f"_impl.rms_norm(args[{x[2:]}], (args[{x[2:]}].shape[-1],), "
        f"{f'args[{w[2:]}]' if w else 'None'}, {match.params['eps']!r})"
    )
    head = wrappers.prelude(entry, origin) + "\n_impl = _load('impl.py', _FROZEN.parent)\n"
    if wrappers._kind(ctx, entry) == "class":
        body = f"""

class {name}(_src.{symbol}):
    def forward(self, *args):
        out = {call}
        return super().forward(*args) if out is None else out
"""
    else:
        body = f"""

def {name}(*args):
    out = {call}
    return _src.{symbol}(*args) if out is None else out
"""
    return head + body + wrappers._extras(ctx)


def place(ctx: BuildContext, entry: str, match: Match, name: str, impl: str, origin: str) -> Path:
    """Write a candidate that sends `match` to `impl` (op_route's canonical functions): routed,
    or for a whole match called on the reference's inputs. Libraries use it too."""
    if match.how == "whole":
        path = write_candidate(ctx, name, _whole_wrapper(ctx, entry, match, origin))
    else:
        path = write_candidate(ctx, name, wrappers.routed(ctx, entry, ROUTE.name, "Route", origin))
        shutil.copy2(ROUTE, path / ROUTE.name)
        route = {"op": match.op, "epilogue": match.params.get("epilogue", [])}
        (path / "route.json").write_text(json.dumps(route))
    (path / "impl.py").write_text(impl)
    return path


def build_all(ctx: BuildContext, entry: str, found: list[Match], origin: str) -> CandidateRef:
    """One candidate routing every routed match to its template at its default point."""
    routes, configs = [], []
    digest = hashlib.sha256("".join(m.label for m in found).encode()).hexdigest()[:8]
    name = f"template-all-{digest}"
    path = write_candidate(ctx, name, wrappers.routed(ctx, entry, ROUTE.name, "Route", origin))
    shutil.copy2(ROUTE, path / ROUTE.name)
    for i, m in enumerate(found):
        _, config = space(m, ctx.arch.vendor)
        (path / f"impl_{i}.py").write_text(render_impl(m, config))
        routes.append(
            {"op": m.op, "epilogue": m.params.get("epilogue", []), "impl": f"impl_{i}.py"}
        )
        configs.append({"match": m.label, "template": TEMPLATE[m.op], "config": config})
    (path / "route.json").write_text(json.dumps({"routes": routes}))
    return CandidateRef(
        name=name, language="triton", mode="optimize", path=str(path), origin=origin,
        params={"templates": configs},
    )  # fmt: skip


def build(ctx: BuildContext, entry: str, match: Match, config: dict, origin: str) -> CandidateRef:
    """Write the candidate for `match` at `config` and say where it came from."""
    name = config_name(match, config)
    path = place(ctx, entry, match, name, render_impl(match, config), origin)
    return CandidateRef(
        name=name,
        language="triton",
        mode="optimize",
        path=str(path),
        origin=origin,
        params={
            "template": TEMPLATE[match.op],
            "match": match.label,
            "how": match.how,
            "config": config,
        },  # fmt: skip
    )


def tunable(ctx: BuildContext, entry: str, match: Match, origin: str) -> Tunable:
    """What the Triton search lane tunes when the frozen op is torch: the match's template."""
    sp, default = space(match, ctx.arch.vendor)
    return Tunable(
        sp,
        lambda config: build(ctx, entry, match, config, describe(origin, match, config)),
        [default],
        language="triton",
        origin=origin,
    )
