"""Gated activations (SwiGLU, GeGLU) without a model: matched on traced references in their three
spellings, the template checked under TRITON_INTERPRET=1 at sizes not a multiple of its tiles,
and the route that fuses the activation's call with the product that reads it."""

import json
import shutil

import pytest
import torch
import torch.nn.functional as F

from kernel_bakeoff.tasks.backends import kernel_templates as kt
from kernel_bakeoff.tasks.backends.match import Match, find
from tests.test_match_templates import PROBLEM, _configs, _load, pytestmark, traced  # noqa: F401

CASES = {
    # two projections: silu(x @ W1) * (x @ W2), the gate's GEMM taking silu as its epilogue too
    "two_linears": (
        "        self.w1 = nn.Linear(24, 40, bias=False)\n"
        "        self.w2 = nn.Linear(24, 40, bias=False)",
        "F.silu(self.w1(x)) * self.w2(x)",
        ["linear+silu", "swiglu", "linear"],
    ),
    "chunked": ("        pass", "F.silu(x.chunk(2, -1)[0]) * x.chunk(2, -1)[1]", ["swiglu"]),
    "geglu_tanh": (
        "        pass",
        "x[:, 12:] * F.gelu(x[:, :12], approximate='tanh')",
        ["geglu"],
    ),
}


def _problem(tmp_path, name, body, init="        pass", inputs="torch.randn(16, 24)"):
    path = tmp_path / f"{name}.py"
    path.write_text(PROBLEM.format(init=init, args="x", body=body, inputs=inputs))
    return path


@pytest.mark.parametrize("name", sorted(CASES))
def test_gated_spellings_are_matched(tmp_path, name):
    init, body, labels = CASES[name]
    found, _ = find(traced(_problem(tmp_path, name, body, init)))
    assert [m.label for m in found] == labels
    gated = next(m for m in found if m.op in ("swiglu", "geglu"))
    assert gated.dtype == "float32" and len(gated.reads) == 2
    if name == "geglu_tanh":
        assert gated.params == {"approximate": "tanh"}
        assert gated.shapes == {"default": [16, 12]}


def test_a_broadcast_product_is_not_a_gated_activation(tmp_path):
    found, notes = find(traced(_problem(tmp_path, "bc", "F.silu(x) * x[0]")))
    assert found == [] and notes == ["swiglu: its two operands differ in shape (a broadcast)"]


def test_an_activation_read_twice_is_not_fused(tmp_path):
    found, _ = find(traced(_problem(tmp_path, "twice", "F.silu(x) * x + F.silu(x)")))
    assert [m.label for m in found] == ["swiglu"]  # only the silu read once by a product
    found, _ = find(traced(_problem(tmp_path, "reuse", "(lambda g: g * x + g)(F.silu(x))")))
    # not gated; the whole reference is one elementwise region of x (tests/test_match_kernelbench)
    assert [(m.op, m.how) for m in found] == [("elementwise", "whole")]


GATED = [{"BLOCK_M": 2, "BLOCK_N": 128, "num_warps": 1}, {"BLOCK_M": 16, "BLOCK_N": 128}]


@pytest.mark.parametrize("op,approximate", [("swiglu", None), ("geglu", "none"), ("geglu", "tanh")])
def test_gated_template(tmp_path, op, approximate):
    """7 x 5 rows of 300 (tiles of 2 or 16 rows by 128 or 256 columns leave tails), the operands
    both contiguous and the two strided halves of one chunk."""
    params = {} if approximate is None else {"approximate": approximate}
    m = Match(op, "route", "float32", {"w": [7, 5, 300]}, ["in0", "in1"], params)
    x = torch.randn(7, 5, 600) * 3
    halves, apart = x.chunk(2, -1), (torch.randn(7, 5, 300), torch.randn(7, 5, 300))
    for i, c in enumerate(_configs(m, GATED)):
        impl = _load(kt.render_impl(m, c), tmp_path, f"{op}{approximate}{i}")
        for a, b in (halves, apart):
            act = F.silu(a) if op == "swiglu" else F.gelu(a, approximate=approximate)
            got = impl.swiglu(a, b) if op == "swiglu" else impl.geglu(a, b, approximate)
            torch.testing.assert_close(got, act * b, rtol=1e-5, atol=1e-5)
        assert getattr(impl, op)(x[..., :300], x[..., :1], *params.values()) is None  # broadcast
    if op == "geglu":  # rendered for one GELU: the other is left to torch
        assert impl.geglu(*apart, "tanh" if approximate == "none" else "none") is None


def _route(tmp_path, m: Match):
    route_dir = tmp_path / "cand"
    route_dir.mkdir()
    shutil.copy2(kt.ROUTE, route_dir / "op_route.py")
    (route_dir / "impl.py").write_text(kt.render_impl(m, kt.space(m)[1]))
    (route_dir / "route.json").write_text(json.dumps({"op": m.op, "epilogue": []}))
    route = _load((route_dir / "op_route.py").read_text(), route_dir, "op_route")
    route.Route.engaged = 0
    return route


def test_route_fuses_the_gate_with_its_product(tmp_path):
    m = Match("swiglu", "route", "float32", {"w": [6, 20]}, ["c0", "c0.1"])
    route = _route(tmp_path, m)
    x = torch.randn(6, 40)
    with torch.no_grad():
        want = (lambda a, b: b * F.silu(a))(*x.chunk(2, -1)) + 1
        with route.Route():
            got = (lambda a, b: b * F.silu(a))(*x.chunk(2, -1)) + 1
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert route.Route.engaged == 1


def test_route_fills_the_gate_when_something_else_reads_it(tmp_path):
    """A use the matcher did not see (here the gate read before the product): the placeholder
    gets the activation's real output, and the product then runs in torch."""
    m = Match("geglu", "route", "float32", {"w": [6, 20]}, ["in0", "in1"], {"approximate": "none"})
    route = _route(tmp_path, m)
    a, b = torch.randn(6, 20), torch.randn(6, 20)
    with torch.no_grad(), route.Route():
        g = F.gelu(a)
        first = g + 0
        got = g * b
        tanh = F.gelu(a, approximate="tanh") * b  # not the rendered GELU: torch's result
    torch.testing.assert_close(first, F.gelu(a))
    torch.testing.assert_close(got, F.gelu(a) * b)
    torch.testing.assert_close(tanh, F.gelu(a, approximate="tanh") * b)
    assert route.Route.engaged == 0


def test_every_match_at_once_on_two_projections(tmp_path):
    """The all-matches route of silu(w1(x)) * w2(x): the first GEMM takes silu as its epilogue
    (so the gated route is not engaged and the product runs in torch). The second GEMM is
    offered to the epilogue route first, which defers it; its output meets the product, not
    silu, so it is filled by torch's linear: never given the first GEMM's epilogue."""
    init, body, _ = CASES["two_linears"]
    found, _ = find(traced(_problem(tmp_path, "two", body, init)))
    route_dir = tmp_path / "all"
    route_dir.mkdir()
    shutil.copy2(kt.ROUTE, route_dir / "op_route.py")
    routes = []
    for i, m in enumerate(found):
        (route_dir / f"impl_{i}.py").write_text(kt.render_impl(m, kt.space(m)[1]))
        routes.append(
            {"op": m.op, "epilogue": m.params.get("epilogue", []), "impl": f"impl_{i}.py"}
        )
    (route_dir / "route.json").write_text(json.dumps({"routes": routes}))
    route = _load((route_dir / "op_route.py").read_text(), route_dir, "op_route")
    route.Route.engaged = 0
    w1, w2 = torch.nn.Linear(24, 40, bias=False), torch.nn.Linear(24, 40, bias=False)
    x = torch.randn(16, 24)
    with torch.no_grad():
        want = F.silu(w1(x)) * w2(x)
        with route.Route():
            got = F.silu(w1(x)) * w2(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert route.Route.engaged == 1  # the first GEMM with its silu
