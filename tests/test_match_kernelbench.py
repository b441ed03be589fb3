"""KernelBench-shaped references matched on their traced calls (GEMMs of every form with any
elementwise epilogue region, elementwise-only references), and the GEMM and pointwise templates
rendered from those matches, checked under TRITON_INTERPRET=1 at edge sizes."""

import json
import shutil

import pytest
import torch
import torch.nn.functional as F

from kernel_bakeoff.tasks.backends import kernel_templates as kt
from kernel_bakeoff.tasks.backends.match import Match, find
from tests.test_match_templates import PROBLEM, _load, pytestmark, traced  # noqa: F401

# name: (init, forward args, forward body, get_inputs) -> (label, reads)
CASES = {
    "square": ("pass", "a, b", "torch.matmul(a, b)", "torch.randn(9, 9), torch.randn(9, 9)"),
    "batched": ("pass", "a, b", "torch.bmm(a, b)", "torch.randn(3, 5, 7), torch.randn(3, 7, 4)"),
    "transposed": ("pass", "a, b", "torch.matmul(a.T, b)", "torch.randn(7, 5), torch.randn(7, 4)"),
    "scale_leaky": (
        "pass",
        "a, b",
        "F.leaky_relu(torch.matmul(a, b) * 0.5, negative_slope=0.2)",
        "torch.randn(6, 7), torch.randn(7, 5)",
    ),
    "linear_swish": (
        "self.fc = nn.Linear(8, 6)",
        "x",
        "(lambda y: y * torch.sigmoid(y))(self.fc(x))",  # swish after the GEMM
        "torch.randn(4, 8)",
    ),
    "gelu_by_hand": (
        "pass",
        "x",
        "0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * torch.pow(x, 3.0))))",
        "torch.randn(4, 33)",
    ),
    "conv": ("self.c = nn.Conv2d(3, 4, 3)", "x", "self.c(x)", "torch.randn(1, 3, 8, 8)"),
    "conv_relu_scale": (
        "self.c = nn.Conv2d(3, 4, 3); self.b = nn.Parameter(torch.randn(4, 1, 1))",
        "x",
        "torch.relu(self.c(x)) * 2.0 + self.b",  # the bias is a second tensor: torch's
        "torch.randn(2, 3, 9, 9)",
    ),
}
EXPECT = {
    "square": "matmul",
    "batched": "matmul",
    "transposed": "matmul",
    "scale_leaky": "matmul+mul+leaky_relu",
    "linear_swish": "linear+sigmoid+mul",
    "gelu_by_hand": "elementwise+mul+pow+mul+add+mul+tanh+add+mul",
    "conv_relu_scale": ["conv+relu+mul", "conv_epilogue+relu+mul"],  # template, or torch's
}


def _problem(tmp_path, name):
    init, args, body, inputs = CASES[name]
    path = tmp_path / f"{name}.py"
    path.write_text(PROBLEM.format(init=f"        {init}", args=args, body=body, inputs=inputs))
    return path


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_kernelbench_shapes_are_matched(tmp_path, name):
    found, notes = find(traced(_problem(tmp_path, name)))
    want = EXPECT[name] if isinstance(EXPECT[name], list) else [EXPECT[name]]
    assert [m.label for m in found] == want, notes
    assert found[0].dtype == "float32"
    if name == "gelu_by_hand":
        assert found[0].how == "whole" and found[0].reads == ["in0"]


def test_a_lone_convolution_is_the_conv_templates_alone(tmp_path):
    found, notes = find(traced(_problem(tmp_path, "conv")))
    assert [m.label for m in found] == ["conv"] and notes == []
    assert found[0].reads[0] == "in0" and found[0].params["has_bias"]


def test_an_elementwise_start_that_is_not_the_whole_reference_says_so(tmp_path):
    path = tmp_path / "p.py"
    body = "torch.flip(torch.relu(x) * 2.0, [0])"
    path.write_text(
        PROBLEM.format(init="        pass", args="x", body=body, inputs="torch.randn(3, 4)")
    )
    found, notes = find(traced(path))
    assert found == [] and notes == ["elementwise relu+mul up to flip, not the whole"]


GEMM_EDGES = [
    ((37, 45), (45, 19)),  # not multiples of any block
    ((3, 1, 45), (3, 45, 19)),  # batched, one row each
    ((1, 1), (1, 1)),  # a single element
    ((5, 7, 9), (9, 3)),  # a 3D tensor times a matrix
    ((9, 5), (2, 5, 7)),  # a matrix times a batch
]


@pytest.mark.parametrize("shapes", GEMM_EDGES)
def test_gemm_template_at_edge_sizes(tmp_path, shapes):
    a, b = torch.randn(shapes[0]), torch.randn(shapes[1])
    lines = [{"fn": "__mul__", "line": "v1 = (v0 * 0.5)"},
             {"fn": "leaky_relu", "line": "v2 = (tl.where(v1 >= 0.0, v1, v1 * 0.2))"}]  # fmt: skip
    m = Match("matmul", "route", "float32", {"w": list(shapes[0])}, ["in0", "in1"],
              {"epilogue": lines})  # fmt: skip
    want = F.leaky_relu(torch.matmul(a, b) * 0.5, 0.2)
    extra = [{"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 1, "precision": "ieee"}]
    for i, c in enumerate(kt_configs(m, extra)):
        impl = _load(kt.render_impl(m, c), tmp_path, f"gemm{i}")
        torch.testing.assert_close(impl.matmul(a, b), want, rtol=1e-4, atol=1e-4)
    assert impl.matmul(a.double(), b.double()) is None  # not its dtype: left to torch


def test_gemm_template_reads_a_transposed_view_without_a_copy(tmp_path):
    a, b = torch.randn(45, 37), torch.randn(45, 19)
    m = Match("matmul", "route", "float32", {"w": [37, 45]}, ["c0", "in1"], {"epilogue": []})
    impl = _load(kt.render_impl(m, kt.space(m)[1]), tmp_path, "gemm_t")
    torch.testing.assert_close(impl.matmul(a.T, b), a.T @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [1, 1000, 4099])
def test_pointwise_template(tmp_path, n):
    """A hand-written GELU (x * sigmoid(...) with x read twice): one region, one kernel."""
    x = torch.randn(n) * 3
    lines = [{"fn": "sigmoid", "line": "v1 = (tl.sigmoid((v0 * 1.702)))"},
             {"fn": "__mul__", "line": "v2 = (v0 * v1)"}]  # fmt: skip
    m = Match("elementwise", "whole", "float32", {"w": [n]}, ["in0"], {"epilogue": lines})
    for i, c in enumerate(kt_configs(m, [{"BLOCK": 256, "num_warps": 1}])):
        impl = _load(kt.render_impl(m, c), tmp_path, f"pw{i}")
        torch.testing.assert_close(impl.elementwise(x), x * torch.sigmoid(x * 1.702))


def kt_configs(match, extra):
    space, default = kt.space(match)
    out = [default] + [{**default, **e} for e in extra]
    assert all(space.invalid(c) is None for c in out)
    return out


def test_route_sends_a_matmul_and_its_swish_epilogue_to_the_template(tmp_path):
    """g * sigmoid(g) after a matmul: the placeholder's first reader gets the fused result and
    the product that reads both is answered by it."""
    found, _ = find(traced(_problem(tmp_path, "linear_swish")))
    (m,) = found
    cand = tmp_path / "cand"
    cand.mkdir()
    shutil.copy2(kt.ROUTE, cand / "op_route.py")
    (cand / "impl.py").write_text(kt.render_impl(m, kt.space(m)[1]))
    (cand / "route.json").write_text(json.dumps({"op": m.op, "epilogue": m.params["epilogue"]}))
    route = _load((cand / "op_route.py").read_text(), cand, "op_route")
    route.Route.engaged = 0
    lin, x = torch.nn.Linear(8, 6), torch.randn(4, 8)
    with torch.no_grad():
        y = lin(x)
        want = y * torch.sigmoid(y)
        with route.Route():
            y = lin(x)
            got = y * torch.sigmoid(y)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert route.Route.engaged == 1


def _routed(tmp_path, m):
    cand = tmp_path / "cand"
    cand.mkdir()
    shutil.copy2(kt.ROUTE, cand / "op_route.py")
    (cand / "impl.py").write_text(kt.render_impl(m, kt.space(m)[1]))
    (cand / "route.json").write_text(json.dumps({"op": m.op, "epilogue": m.params["epilogue"]}))
    route = _load((cand / "op_route.py").read_text(), cand, "op_route")
    route.Route.engaged = 0
    return route


def test_route_runs_a_convolutions_elementwise_region_as_one_kernel(tmp_path):
    m = find(traced(_problem(tmp_path, "conv_relu_scale")))[0][1]  # the second way
    assert m.op == "conv_epilogue"
    route = _routed(tmp_path, m)
    conv, b, x = torch.nn.Conv2d(3, 4, 3), torch.randn(4, 1, 1), torch.randn(2, 3, 9, 9)
    with torch.no_grad():
        want = torch.relu(conv(x)) * 2.0 + b
        with route.Route():
            got = torch.relu(conv(x)) * 2.0 + b
            alone = conv(x)  # a convolution no region reads: torch's output as it is
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(alone, conv(x))
    assert route.Route.engaged == 1


def test_layer_norm_over_three_trailing_dims(tmp_path):
    """KernelBench's LayerNorm: normalized_shape (features, dim1, dim2), a few long rows."""
    path = tmp_path / "ln.py"
    init = "        self.ln = nn.LayerNorm((3, 5, 7))"
    path.write_text(
        PROBLEM.format(init=init, args="x", body="self.ln(x)", inputs="torch.randn(2, 3, 5, 7)")
    )
    (m,), _ = find(traced(path))
    assert (m.label, m.params["row"]) == ("layer_norm", 105)
    for rows in (2, 1):  # one row: a single program
        x = torch.randn(rows, 3, 5, 7) + 1.0
        w, b = torch.rand(3, 5, 7), torch.randn(3, 5, 7)
        for i, c in enumerate(kt_configs(m, [{"passes": "looped", "BLOCK_N": 256}])):
            impl = _load(kt.render_impl(m, c), tmp_path, f"ln{rows}{i}")
            want = F.layer_norm(x, (3, 5, 7), w, b, 1e-5)
            torch.testing.assert_close(impl.layer_norm(x, (3, 5, 7), w, b, 1e-5), want)
            assert impl.layer_norm(x, (5, 7, 3), None, None, 1e-5) is None  # not trailing


ACCEPTANCE = {
    "gemm_fp32_square": "matmul",
    "bmm_fp32": "matmul",
    "gemm_scale_leaky_relu": "linear+mul+leaky_relu",
    "layernorm": "layer_norm",
    "softmax_long_row": "softmax",
    "attention_fp32_hd128": "scaled_dot_product_attention",
}


@pytest.mark.parametrize("name", sorted(ACCEPTANCE))
def test_the_gpu_acceptance_problems_of_issue_43_match_their_template(tmp_path, name):
    """Shrunk as benchmarks/coverage shrinks them; on the GPU they run at their listed sizes."""
    from benchmarks.coverage import shrink
    from tests.conftest import ROOT

    path = tmp_path / f"{name}.py"
    path.write_text(shrink((ROOT / "benchmarks" / "acceptance" / f"{name}.py").read_text()))
    found, notes = find(traced(path))
    assert [m.label for m in found] == [ACCEPTANCE[name]], notes
    assert found[0].dtype == "float32"


@pytest.mark.parametrize(
    "init,body,label,row",
    [
        ("self.n = nn.GroupNorm(2, 6)", "self.n(x)", "group_norm", 3 * 5 * 7),
        ("self.n = nn.InstanceNorm2d(6)", "self.n(x)", "instance_norm", 5 * 7),
    ],
)
def test_group_and_instance_norm(tmp_path, init, body, label, row):
    path = tmp_path / f"{label}.py"
    path.write_text(
        PROBLEM.format(
            init=f"        {init}", args="x", body=body, inputs="torch.randn(3, 6, 5, 7)"
        )
    )
    (m,), _ = find(traced(path))
    assert (m.label, m.params["row"]) == (label, row)
    x, w, b = torch.randn(1, 6, 5, 7) + 0.5, torch.rand(6), torch.randn(6)  # one sample
    for i, c in enumerate(kt_configs(m, [{"passes": "looped", "BLOCK_N": 256}])):
        impl = _load(kt.render_impl(m, c), tmp_path, f"{label}{i}")
        if label == "group_norm":
            for wb in ((w, b), (None, None)):
                want = F.group_norm(x, 2, *wb, 1e-5)
                torch.testing.assert_close(impl.group_norm(x, 2, *wb, 1e-5), want)
            assert impl.group_norm(x, 4, None, None, 1e-5) is None  # 6 channels, 4 groups
        else:
            want = F.instance_norm(x, weight=w, bias=b)
            got = impl.instance_norm(x, None, None, w, b, True, 0.1, 1e-5)
            torch.testing.assert_close(got, want)
            assert impl.instance_norm(x, None, None, w, b, False, 0.1, 1e-5) is None


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_over_an_inner_dim(tmp_path, op):
    """A conv output's channels (dim 1 of [N, C, H, W]): 37 channels, 5x7 columns, not a
    multiple of the tiles; one sample, and a single channel."""
    path = tmp_path / f"{op}.py"
    body = f"torch.{op}(x, dim=1)"
    path.write_text(
        PROBLEM.format(init="        pass", args="x", body=body, inputs="torch.randn(2, 37, 5, 7)")
    )
    (m,), _ = find(traced(path))
    assert (m.label, m.params) == (f"{op}_dim", {"dim": 1})
    for shape in ((2, 37, 5, 7), (1, 1, 3), (3, 300)):
        x = torch.randn(shape) * 3
        for i, c in enumerate(kt_configs(m, [{"BLOCK_R": 4, "BLOCK_I": 32, "num_warps": 1}])):
            impl = _load(kt.render_impl(m, c), tmp_path, f"{op}{len(shape)}{i}")
            torch.testing.assert_close(getattr(impl, f"{op}_dim")(x, 0), getattr(torch, op)(x, 0))
            if len(shape) > 2:
                torch.testing.assert_close(
                    getattr(impl, f"{op}_dim")(x, 1), getattr(torch, op)(x, 1)
                )
            assert getattr(impl, f"{op}_dim")(x, -1) is None  # the last dim: not this template's


def test_batch_norm_in_training_and_in_eval(tmp_path):
    """KernelBench's BatchNorm2d runs in training mode (batch statistics, running ones moved)."""
    path = tmp_path / "bn.py"
    path.write_text(
        PROBLEM.format(
            init="        self.bn = nn.BatchNorm2d(5)",
            args="x",
            body="self.bn(x)",
            inputs="torch.randn(3, 5, 4, 7)",
        )
    )
    (m,), _ = find(traced(path))
    assert (m.label, m.params["training"]) == ("batch_norm", True)
    for i, c in enumerate(kt_configs(m, [{"BLOCK": 256, "num_warps": 1}])):
        impl = _load(kt.render_impl(m, c), tmp_path, f"bn{i}")
        for shape in ((3, 5, 4, 7), (1, 5, 300), (2, 5)):  # one sample; no spatial dims
            x = torch.randn(shape) * 2 + 1
            bn = torch.nn.BatchNorm1d(5) if len(shape) < 4 else torch.nn.BatchNorm2d(5)
            with torch.no_grad():
                bn.weight.uniform_(0.5, 1.5), bn.bias.uniform_(-1, 1)
                rm, rv = bn.running_mean.clone(), bn.running_var.clone()
                ours = impl.batch_norm(x, rm, rv, bn.weight, bn.bias, True, 0.1, 1e-5)
                want = bn(x)
            torch.testing.assert_close(ours, want)
            torch.testing.assert_close((rm, rv), (bn.running_mean, bn.running_var))
            bn.eval()
            with torch.no_grad():
                got = impl.batch_norm(
                    x, bn.running_mean, bn.running_var, None, None, False, 0.1, 1e-5
                )
                want = F.batch_norm(
                    x, bn.running_mean, bn.running_var, None, None, False, 0.1, 1e-5
                )
            torch.testing.assert_close(got, want)


@pytest.mark.parametrize(
    "body,op",
    [
        ("torch.max(x, dim=1)[0]", "max_dim"),
        ("torch.min(x, dim=1).values", "min_dim"),
        ("torch.argmax(x, dim=1)", "argmax"),
        ("torch.argmin(x, dim=1)", "argmin"),
        ("torch.prod(x, dim=1)", "prod"),
    ],
)
def test_indexed_and_product_reductions(tmp_path, body, op):
    path = tmp_path / f"{op}.py"
    path.write_text(
        PROBLEM.format(init="        pass", args="x", body=body, inputs="torch.randn(3, 37, 5)")
    )
    (m,), _ = find(traced(path))
    assert (m.op, m.params["dim"]) == (op, 1)
    x = torch.randn(3, 37, 5) * (0.5 if op == "prod" else 3)  # 37 rows: chunks of 16 leave 5
    ref = getattr(torch, op.removesuffix("_dim"))
    (c,) = kt_configs(m, [{"BLOCK_R": 16, "BLOCK_I": 16}])[1:]  # tiles that leave tails
    impl = _load(kt.render_impl(m, c), tmp_path, op)
    for dim, keepdim in ((1, False), (2, True)):
        got, want = getattr(impl, op)(x, dim, keepdim), ref(x, dim, keepdim=keepdim)
        if op in ("max_dim", "min_dim"):
            torch.testing.assert_close(tuple(got), tuple(want))
            assert type(got) is type(want)
        else:
            torch.testing.assert_close(got, want)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_split_norm_for_few_long_rows(tmp_path, op):
    """Two phases, SPLIT programs a row: one row and three, chunks not multiples of the block."""
    big = Match(op, "route", "float32", {"w": [16, 64, 256, 256]}, ["in0"], {"row": 64 * 256 * 256})
    assert kt.space(big)[1]["passes"] == "split"  # the acceptance LayerNorm's 16 rows of 4M
    m = Match(op, "route", "float32", {"w": [3, 1000]}, ["in0"], {"row": 1000})
    configs = [{"passes": "split", "BLOCK_N": 256, "SPLIT": s} for s in (4, 64)]
    for rows in (1, 3):
        x, w, b = torch.randn(rows, 1000) * 2 + 3, torch.rand(1000), torch.randn(1000)
        for i, c in enumerate(kt_configs(m, configs)[1:]):
            impl = _load(kt.render_impl(m, c), tmp_path, f"{op}{rows}{i}")
            if op == "layer_norm":
                want = F.layer_norm(x, (1000,), w, b, 1e-5)
                torch.testing.assert_close(impl.layer_norm(x, (1000,), w, b, 1e-5), want)
            else:
                want = F.rms_norm(x, (1000,), w, 1e-6)
                torch.testing.assert_close(impl.rms_norm(x, (1000,), w, 1e-6), want)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_split_softmax_for_few_long_rows(tmp_path, op):
    """Two phases, SPLIT programs a row: chunks not multiples of the block, a row of large
    values, and a row of -inf entries with a chunk of nothing else (its partial is -inf, 0)."""
    big = Match(op, "route", "float32", {"w": [16, 1 << 20]}, ["in0"], {"dim": -1})
    assert kt.space(big)[1]["passes"] == "split"  # the acceptance softmax's 16 rows of 1M
    configs = [{"passes": "split", "BLOCK_N": 256, "SPLIT": s} for s in (4, 64)]
    # 1000 columns: 4 partials of 250 at either SPLIT; 1499: the last chunk short, and at
    # SPLIT=64 6 partials, two lanes of 8 masked
    for rows, n in ((1, 1000), (3, 1000), (3, 1499)):
        x = torch.randn(3, n)
        x[1] *= 30
        x[2, :300], x[2, 700::7] = -float("inf"), -float("inf")
        x = x[-rows:]  # one row: the -inf one
        m = Match(op, "route", "float32", {"w": [rows, n]}, ["in0"], {"dim": -1})
        for i, c in enumerate(kt_configs(m, configs)[1:]):
            impl = _load(kt.render_impl(m, c), tmp_path, f"{op}{rows}x{n}{i}")
            torch.testing.assert_close(getattr(impl, op)(x, -1), getattr(torch, op)(x, -1))


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "cross_entropy"])
def test_online_rowwise_with_a_first_chunk_of_minus_inf(tmp_path, op):
    """The online pass over a row whose first chunk is all -inf (a masked prefix): its running
    max stays -inf there, and -inf - -inf must not turn the row's sum into NaN."""
    x = torch.randn(2, 1000)
    x[0, :300] = -float("inf")
    inputs = {"w": [2, 1000]} if op != "cross_entropy" else {"w": [2, 1000], "t": [2]}
    m = Match(op, "route", "float32", inputs, list(inputs), {"dim": -1})
    (c,) = kt_configs(m, [{"passes": "online", "BLOCK_N": 256}])[1:]
    impl = _load(kt.render_impl(m, c), tmp_path, f"online_{op}")
    if op == "cross_entropy":
        t = torch.tensor([500, 7])
        got, want = impl.cross_entropy(x, t, "none"), F.cross_entropy(x, t, reduction="none")
    else:
        got, want = getattr(impl, op)(x, -1), getattr(torch, op)(x, -1)
    torch.testing.assert_close(got, want)


def test_cross_entropy_is_not_split():
    """Its program writes a row's loss from the whole row's max and sum: one program a row."""
    big = Match("cross_entropy", "route", "float32", {"w": [16, 1 << 20]}, ["in0", "in1"])
    space, default = kt.space(big)
    assert "split" not in space.params[0].values and "SPLIT" not in default
    assert space.invalid({**default, "passes": "split", "SPLIT": 64}) is not None


def test_attention_template_at_head_dim_200(tmp_path):
    """Head dims up to 256: 200 (not a power of two) over 19 causal queries, fp32 at tf32x3."""
    q, k, v = (torch.randn(1, 2, 19, 200) for _ in range(3))
    m = Match("scaled_dot_product_attention", "route", "float32", {"w": [1, 2, 19, 200]}, ["in0"])
    (c,) = kt_configs(m, [{"BLOCK_M": 16, "BLOCK_N": 16}])[1:]
    assert c["precision"] == "tf32x3"
    impl = _load(kt.render_impl(m, c), tmp_path, "attn200")
    got = impl.scaled_dot_product_attention(q, k, v, None, 0.0, True, None, False)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
