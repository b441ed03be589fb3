"""The convolution template (implicit GEMM over conv1d/2d/3d and their transposed forms, groups,
stride, padding, dilation) matched on traced references and checked under TRITON_INTERPRET=1 at
small odd sizes (not multiples of any block, one sample, one output channel a group)."""

import json
import shutil

import pytest
import torch
import torch.nn.functional as F

from kernel_bakeoff.tasks.backends import kernel_templates as kt
from kernel_bakeoff.tasks.backends.match import Match, find
from tests.test_match_templates import PROBLEM, _load, pytestmark, traced  # noqa: F401

# fn, input shape, weight shape, keyword arguments of torch's call
CONVS = [
    ("conv2d", (2, 3, 9, 7), (5, 3, 3, 2), {"padding": 1}),
    ("conv2d", (1, 4, 11, 10), (6, 2, 3, 3),
     {"stride": 2, "padding": (1, 2), "dilation": (2, 1), "groups": 2}),
    ("conv2d", (1, 6, 6, 5), (6, 1, 3, 3), {"padding": 1, "groups": 6}),  # depthwise
    ("conv1d", (3, 5, 17), (4, 5, 3), {"stride": 2, "padding": 1, "dilation": 3}),
    ("conv3d", (1, 2, 4, 5, 3), (3, 2, 3, 2, 1), {"stride": (1, 2, 1), "padding": 1}),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ("conv_transpose1d", (2, 3, 9), (3, 5, 4),
     {"stride": 3, "padding": 2, "output_padding": 1, "dilation": 2}),
    ("conv_transpose3d", (1, 4, 2, 3, 3), (4, 1, 3, 2, 2), {"stride": 2, "padding": 1, "groups": 2}),
]  # fmt: skip
EPILOGUE = [{"fn": "relu", "line": "v1 = (tl.maximum(v0, 0.0))"},
            {"fn": "mul", "line": "v2 = (v1 * 0.5)"}]  # fmt: skip


def _conv_match(fn, epilogue=()):
    params = {"epilogue": list(epilogue), "fn": fn, "transposed": "transpose" in fn}
    return Match("conv", "route", "float32", {"w": [1]}, ["in0", "p:w"], params)


@pytest.mark.parametrize("case", CONVS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONVS)])
def test_conv_template_matches_torch(tmp_path, case):
    fn, xs, ws, kw = case
    x, w = torch.randn(xs), torch.randn(ws)
    transposed = "transpose" in fn
    b = torch.randn(ws[1] * kw.get("groups", 1) if transposed else ws[0])
    want = torch.relu(getattr(F, fn)(x, w, b, **kw)) * 0.5
    m = _conv_match(fn, EPILOGUE)
    loop = "taps" if fn.endswith("2d") else "flat"  # both loops, over the cases
    config = dict(kt.space(m)[1], BLOCK_M=32, BLOCK_N=16, BLOCK_K=16, precision="ieee", loop=loop)
    impl = _load(kt.render_impl(m, config), tmp_path, "conv")
    args = (kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1), kw.get("groups", 1))
    got = impl.conv(x, w, b, *args, kw.get("output_padding", 0), transposed)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert impl.conv(x.double(), w.double(), None, *args, 0, transposed) is None  # torch's
    assert impl.conv(x, w, None, 1, "same", 1, 1, 0, transposed) is None  # a string padding


def test_a_convolution_is_matched_with_and_without_its_region(tmp_path):
    path = tmp_path / "p.py"
    init = "        self.c = nn.ConvTranspose2d(3, 4, 3, stride=2, groups=1)"
    path.write_text(PROBLEM.format(init=init, args="x", body="torch.tanh(self.c(x) - 0.5)",
                                   inputs="torch.randn(2, 3, 5, 5)"))  # fmt: skip
    found, notes = find(traced(path))
    assert [m.label for m in found] == ["conv+sub+tanh", "conv_epilogue+sub+tanh"], notes
    assert found[0].params["transposed"] and found[0].params["out_per_group"] == 4
    path.write_text(PROBLEM.format(init="        self.c = nn.Conv1d(3, 4, 3)", args="x",
                                   body="self.c(x)", inputs="torch.randn(2, 3, 9)"))  # fmt: skip
    found, _ = find(traced(path))
    assert [m.label for m in found] == ["conv"] and found[0].reads[0] == "in0"


def test_route_sends_the_convolution_and_its_region_to_the_template(tmp_path):
    cand = tmp_path / "cand"
    cand.mkdir()
    shutil.copy2(kt.ROUTE, cand / "op_route.py")
    m = _conv_match("conv2d", EPILOGUE)
    (cand / "impl.py").write_text(kt.render_impl(m, kt.space(m)[1]))
    route_json = {"op": "conv", "epilogue": [{"fn": e["fn"]} for e in EPILOGUE]}
    (cand / "route.json").write_text(json.dumps(route_json))
    route = _load((cand / "op_route.py").read_text(), cand, "op_route")
    route.Route.engaged = 0
    conv, x = torch.nn.Conv2d(3, 5, 3, padding=1, stride=2), torch.randn(2, 3, 7, 6)
    with torch.no_grad():
        want = torch.relu(conv(x)) * 0.5 + 1.0
        with route.Route():
            got = torch.relu(conv(x)) * 0.5 + 1.0
            alone = conv(x) + 1.0  # a convolution the region does not follow: filled, exact
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(alone, conv(x) + 1.0)
    assert route.Route.engaged == 1


SECOND = {  # a region whose first step reads a second tensor: (init, body, inputs, label)
    "conv_bias": ("self.c = nn.ConvTranspose2d(3, 4, 3, stride=2); "
                  "self.bias = nn.Parameter(torch.randn(4, 1, 1))",
                  "torch.tanh(self.c(x) - self.bias)", "x", "torch.randn(2, 3, 5, 4)",
                  "conv+sub+tanh"),
    "conv_residual": ("self.c = nn.Conv3d(2, 3, 3, padding=1)", "torch.relu(r + self.c(x))", "x, r",
                      "torch.randn(1, 2, 3, 4, 5), torch.randn(1, 3, 3, 4, 5)", "conv+add+relu"),
    "linear_bias": ("self.fc = nn.Linear(7, 5); self.b = nn.Parameter(torch.randn(5))",
                    "torch.sigmoid(self.fc(x) * self.b)", "x", "torch.randn(3, 4, 7)",
                    "linear+mul+sigmoid"),
    "matmul_residual": ("pass", "torch.matmul(a, b) + r", "a, b, r",
                        "torch.randn(2, 5, 7), torch.randn(2, 7, 3), torch.randn(5, 3)",
                        "matmul+add"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SECOND))
def test_a_region_reading_a_second_tensor_is_fused(tmp_path, name):
    """`y + self.bias` (broadcast) or `r + y` (a residual input) after a GEMM or convolution:
    the template loads the tensor at the output's index, the route hands it over."""
    init, body, args, inputs, label = SECOND[name]
    path = tmp_path / "p.py"
    path.write_text(PROBLEM.format(init=f"        {init}", args=args, body=body, inputs=inputs))
    found, notes = find(traced(path))
    assert found[0].label == label, notes
    assert len(found[0].reads) == len(set(found[0].reads)) and found[0].reads[-1] != "in0"
    m = found[0]
    cand = tmp_path / "cand"
    cand.mkdir()
    shutil.copy2(kt.ROUTE, cand / "op_route.py")
    config = dict(kt.space(m)[1], precision="ieee")
    (cand / "impl.py").write_text(kt.render_impl(m, config))
    (cand / "route.json").write_text(json.dumps({"op": m.op, "epilogue": m.params["epilogue"]}))
    route = _load((cand / "op_route.py").read_text(), cand, "op_route")
    route.Route.engaged = 0
    ns: dict = {}
    exec(path.read_text(), ns)
    torch.manual_seed(0)
    model, xs = ns["Model"](), ns["get_inputs"]()
    with torch.no_grad():
        want = model(*xs)
        with route.Route():
            got = model(*xs)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert route.Route.engaged == 1
