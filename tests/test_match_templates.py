"""Matching traced references without a model, and the Triton templates rendered from the matches,
checked under TRITON_INTERPRET=1 at small sizes (not multiples of the blocks, odd leading dims)."""

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from kernel_bakeoff.scripts.formats import load_spec
from kernel_bakeoff.tasks.backends import kernel_templates as kt
from kernel_bakeoff.tasks.backends.match import Match, find
from kernel_bakeoff.tasks.backends.trace import trace
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or os.environ.get("TRITON_INTERPRET") != "1",
    reason="needs triton and its CPU interpreter (TRITON_INTERPRET=1, set by conftest on CPU)",
)

PROBLEM = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init}

    def forward(self, {args}):
        return {body}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
"""

# name: (init lines, forward args, forward body, get_inputs) -> expected match label, dim, reads
CASES = {
    "softmax": ("        pass", "x", "torch.softmax(x, dim=1)", "torch.randn(7, 33)"),
    "log_softmax": ("        pass", "x", "F.log_softmax(x, -1)", "torch.randn(3, 5, 33)"),
    "layer_norm": (
        "        self.ln = nn.LayerNorm(33)",
        "x",
        "self.ln(x)",
        "torch.randn(5, 33)",
    ),
    "rms_norm": (
        "        self.n = nn.RMSNorm(33, eps=1e-5)",
        "x",
        "self.n(x)",
        "torch.randn(5, 33)",
    ),
    "cross_entropy": (
        "        pass",
        "x, t",
        "F.cross_entropy(x, t)",
        "torch.randn(9, 33), torch.randint(0, 33, (9,))",
    ),
    "linear+relu": (
        "        self.fc = nn.Linear(24, 40)",
        "x",
        "torch.relu(self.fc(x))",
        "torch.randn(16, 24)",
    ),
    "sum": ("        pass", "x", "x.sum(dim=1)", "torch.randn(3, 17, 5)"),
    "cumsum": ("        pass", "x", "torch.cumsum(x, dim=-1)", "torch.randn(3, 5, 40)"),
    "scaled_dot_product_attention": (
        "        pass",
        "q, k, v",
        "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
        "torch.randn(2, 3, 9, 16), torch.randn(2, 3, 9, 16), torch.randn(2, 3, 9, 16)",
    ),
}


def write_problem(tmp_path: Path, name: str) -> Path:
    init, args, body, inputs = CASES[name]
    path = tmp_path / f"{name.replace('+', '_')}.py"
    path.write_text(PROBLEM.format(init=init, args=args, body=body, inputs=inputs))
    return path


def traced(path: Path) -> dict:
    spec, src = load_spec(path)
    return trace(spec, src, spec.reference_entry)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_op_class_is_matched_with_its_shapes(tmp_path, name):
    (m,), notes = find(traced(write_problem(tmp_path, name)))
    assert m.label == name and m.how == "route" and m.dtype == "float32"
    inputs = CASES[name][3]
    assert m.shapes == {"default": list(eval(f"[{inputs}]")[0].shape)}  # the first input's
    if name in ("layer_norm", "rms_norm", "linear+relu"):
        assert any(r.startswith("p:") for r in m.reads)  # the module's parameters are read
    if name == "rms_norm":
        assert m.params == {"eps": 1e-5, "has_weight": True, "row": 33}


def test_hand_written_rmsnorm_is_a_whole_match():
    spec, src = load_spec(EXAMPLES / "rmsnorm_torch")
    (m,), _ = find(trace(spec, src, spec.entry))
    assert (m.op, m.how, m.reads) == ("rms_norm", "whole", ["in0", "in1"])
    assert m.params["eps"] == pytest.approx(1e-6)
    assert m.shapes == {"tokens_256": [256, 1024], "tokens_1k": [1024, 512]}


def test_a_problem_with_no_match_says_so(tmp_path):
    path = tmp_path / "cumprod.py"  # (a max_pool2d was this example until the pool template)
    body = "torch.cumprod(x, 1)"
    path.write_text(
        PROBLEM.format(init="        pass", args="x", body=body, inputs="torch.randn(1, 2, 6, 6)")
    )
    found, notes = find(traced(path))
    assert found == [] and notes == ["no op class matched (calls seen: cumprod)"]


def test_a_cumsum_over_a_leading_dim_is_not_matched_and_says_why(tmp_path):
    path = tmp_path / "p.py"
    path.write_text(
        PROBLEM.format(
            init="        pass", args="x", body="x.cumsum(0)", inputs="torch.randn(4, 6)"
        )
    )
    found, notes = find(traced(path))
    assert found == [] and notes == ["cumsum over dim 0, not the last"]


def test_flops_and_bytes_of_linear_relu(tmp_path):
    t = traced(write_problem(tmp_path, "linear+relu"))["workloads"]["default"]
    assert t["flops"] == 2 * 16 * 24 * 40  # FlopCounterMode: the addmm
    # read x, weight, bias once; write the output once (fp32)
    assert t["bytes"] == 4 * (16 * 24 + 40 * 24 + 40 + 16 * 40)


def _load(text: str, tmp_path: Path, name: str = "impl"):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"_t_{tmp_path.name}_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _configs(match: Match, extra: list[dict]) -> list[dict]:
    """The default point, then hand-picked edge points (blocks smaller than the rows)."""
    space, default = kt.space(match)
    out = [default] + [{**default, **e} for e in extra]
    for c in out:
        assert space.invalid(c) is None, (c, space.invalid(c))
    return out


ROWWISE = [
    {"passes": "online", "BLOCK_N": 256, "persistent": True},
    {"passes": "max_sum", "BLOCK_N": 256, "num_warps": 1},
    {"persistent": True, "num_warps": 2},
]


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_rowwise_templates(tmp_path, op):
    x = torch.randn(3, 5, 300) * 3  # 15 rows, 300 columns: not a multiple of 256
    m = Match(op, "route", "float32", {"w": [3, 5, 300]}, ["in0"], {"dim": -1})
    for i, c in enumerate(_configs(m, ROWWISE)):
        impl = _load(kt.render_impl(m, c), tmp_path, f"{op}{i}")
        got = getattr(impl, op)(x, -1)
        torch.testing.assert_close(got, getattr(F, op)(x, -1), rtol=1e-5, atol=1e-6)
        assert getattr(impl, op)(x, 1) is None  # not the last dim: left to torch


def test_cross_entropy_template(tmp_path):
    x, t = torch.randn(7, 300), torch.randint(0, 300, (7,))
    t[2] = -100  # ignored, as in torch
    m = Match("cross_entropy", "route", "float32", {"w": [7, 300]}, ["in0", "in1"])
    for i, c in enumerate(_configs(m, ROWWISE)):
        impl = _load(kt.render_impl(m, c), tmp_path, f"ce{i}")
        for reduction in ("mean", "sum", "none"):
            want = F.cross_entropy(x, t, reduction=reduction)
            torch.testing.assert_close(impl.cross_entropy(x, t, reduction), want)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_norm_templates(tmp_path, op):
    x, w, b = torch.randn(3, 3, 300) + 1.5, torch.rand(300), torch.randn(300)
    m = Match(op, "route", "float32", {"w": [3, 3, 300]}, ["in0"])
    extra = [{"passes": "looped", "BLOCK_N": 256, "persistent": True}, {"persistent": True}]
    for i, c in enumerate(_configs(m, extra)):
        impl = _load(kt.render_impl(m, c), tmp_path, f"{op}{i}")
        if op == "layer_norm":
            for wb in ((w, b), (None, None), (w, None)):
                got = impl.layer_norm(x, (300,), *wb, 1e-5)
                torch.testing.assert_close(got, F.layer_norm(x, (300,), *wb, 1e-5))
        else:
            torch.testing.assert_close(
                impl.rms_norm(x, (300,), w, 1e-6), F.rms_norm(x, (300,), w, 1e-6)
            )
            torch.testing.assert_close(impl.rms_norm(x, (300,), None, None), F.rms_norm(x, (300,)))


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
def test_reduction_templates(tmp_path, op):
    x = torch.randn(3, 7, 5)
    m = Match(op, "route", "float32", {"w": [3, 7, 5]}, ["in0"], {"dim": 1})
    for i, c in enumerate(_configs(m, [{"BLOCK_R": 16, "BLOCK_I": 16}])):
        impl = _load(kt.render_impl(m, c), tmp_path, f"{op}{i}")
        for dim in (0, 1, 2, -1):
            for keepdim in (False, True):
                want = getattr(torch, op)(x, dim, keepdim=keepdim)
                torch.testing.assert_close(getattr(impl, op)(x, dim, keepdim), want)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_template(tmp_path, causal):
    """37 queries over 29 keys of dim 24: none a multiple of the 16-wide blocks."""
    q, k, v = torch.randn(2, 3, 37, 24), torch.randn(2, 3, 29, 24), torch.randn(2, 3, 29, 24)
    m = Match("scaled_dot_product_attention", "route", "float32", {"w": [2, 3, 37, 24]}, ["in0"])
    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    extra = [{"BLOCK_M": 16, "BLOCK_N": 16, "precision": "ieee"}]
    for i, c in enumerate(_configs(m, extra)):
        impl = _load(kt.render_impl(m, c), tmp_path, f"attn{i}")
        got = impl.scaled_dot_product_attention(q, k, v, None, 0.0, causal, None, False)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        masked = impl.scaled_dot_product_attention(
            q, k, v, torch.ones(37, 29).bool(), 0.0, causal, None, False
        )
        assert masked is None  # a mask: left to torch


def test_scan_template(tmp_path):
    x = torch.randn(3, 5, 300)  # 15 rows of 300: chunks of 256 leave a tail
    m = Match("cumsum", "route", "float32", {"w": [3, 5, 300]}, ["in0"], {"dim": -1})
    extra = [{"passes": "chunked", "BLOCK_N": 256, "persistent": True}]
    for i, c in enumerate(_configs(m, extra)):
        impl = _load(kt.render_impl(m, c), tmp_path, f"scan{i}")
        torch.testing.assert_close(impl.cumsum(x, -1), torch.cumsum(x, -1), rtol=1e-5, atol=1e-4)
        assert impl.cumsum(x, 0) is None


@pytest.mark.parametrize(
    "epilogue",
    [
        [],
        [{"fn": "relu"}],
        [{"fn": "gelu", "approximate": "tanh"}],
        [{"fn": "sigmoid"}, {"fn": "tanh"}],
    ],
)
def test_linear_template_with_epilogue(tmp_path, epilogue):
    x, w, b = torch.randn(3, 11, 29), torch.randn(19, 29), torch.randn(19)
    m = Match("linear", "route", "float32", {"w": [3, 11, 29]}, ["in0"], {"epilogue": epilogue})
    want = F.linear(x, w, b)
    for e in epilogue:
        want = (
            F.gelu(want, approximate="tanh") if e["fn"] == "gelu" else getattr(torch, e["fn"])(want)
        )
    extra = [{"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 1, "precision": "ieee"}]
    for i, c in enumerate(_configs(m, extra)):
        impl = _load(kt.render_impl(m, c), tmp_path, f"lin{i}")
        torch.testing.assert_close(impl.linear(x, w, b), want, rtol=1e-4, atol=1e-4)
        assert impl.linear(x.double(), w.double(), b.double()) is None  # not its dtype


def test_route_replaces_the_matched_gemm_and_its_epilogue(tmp_path):
    """The candidate's route: F.linear and the gelu after it go to the template; the rest stays."""
    route_dir = tmp_path / "cand"
    route_dir.mkdir()
    shutil.copy2(kt.ROUTE, route_dir / "op_route.py")
    m = Match(
        "linear",
        "route",
        "float32",
        {"w": [6, 10]},
        ["in0"],
        {"epilogue": [{"fn": "gelu", "approximate": "none"}]},
    )
    _, default = kt.space(m)
    (route_dir / "impl.py").write_text(kt.render_impl(m, default))
    (route_dir / "route.json").write_text(
        json.dumps({"op": "linear", "epilogue": m.params["epilogue"]})
    )
    route = _load((route_dir / "op_route.py").read_text(), route_dir, "op_route")
    route.Route.engaged = 0
    lin = torch.nn.Linear(10, 12)
    x = torch.randn(6, 10)
    with torch.no_grad():
        want = F.gelu(lin(x)) * 2
        with route.Route():
            got = F.gelu(lin(x)) * 2
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert route.Route.engaged == 1


def test_one_route_replaces_every_match(tmp_path):
    """route.json with several routes: the GEMM (+ReLU) and the softmax after it both go to
    their templates, in one candidate."""
    route_dir = tmp_path / "all"
    route_dir.mkdir()
    shutil.copy2(kt.ROUTE, route_dir / "op_route.py")
    gemm = Match(
        "linear", "route", "float32", {"w": [6, 10]}, ["in0"], {"epilogue": [{"fn": "relu"}]}
    )
    soft = Match("softmax", "route", "float32", {"w": [6, 12]}, ["c1"], {"dim": -1})
    routes = []
    for i, m in enumerate((gemm, soft)):
        (route_dir / f"impl_{i}.py").write_text(kt.render_impl(m, kt.space(m)[1]))
        routes.append(
            {"op": m.op, "epilogue": m.params.get("epilogue", []), "impl": f"impl_{i}.py"}
        )
    (route_dir / "route.json").write_text(json.dumps({"routes": routes}))
    route = _load((route_dir / "op_route.py").read_text(), route_dir, "op_route")
    route.Route.engaged = 0
    lin, x = torch.nn.Linear(10, 12), torch.randn(6, 10)
    with torch.no_grad():
        want = torch.softmax(torch.relu(lin(x)), -1)
        with route.Route():
            got = torch.softmax(torch.relu(lin(x)), -1)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert route.Route.engaged == 2


def test_nvidia_spaces_prune_tiles_an_h100_cannot_hold():
    """benchmarks/sm90_preflight.md: fp32 GEMM and attention tiles over 227 KB of shared memory
    (or an accumulator over 128 registers a thread) are not points of the nvidia space."""
    gemm = Match("matmul", "route", "float32", {"w": [4096, 4096]}, ["in0", "in1"])
    space, default = kt.space(gemm)
    assert space.invalid(default) is None
    big = {**default, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": 4}
    assert "shared memory" in space.invalid(big)  # 384 KB of A and B tiles
    wide = {**default, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 16, "num_stages": 2}
    assert "registers" in space.invalid(wide)  # 256 accumulator registers a thread at 4 warps
    assert kt.space(gemm, "amd")[0].invalid({**big, "precision": "ieee"}) is None  # sm_90 only
    attn = Match(
        "scaled_dot_product_attention", "route", "float32", {"w": [4, 16, 1024, 128]}, ["in0"]
    )
    space, default = kt.space(attn)
    assert space.invalid(default) is None  # 192 KB of Q (twice), K and V tiles
    assert "shared memory" in space.invalid({**default, "num_stages": 3})
