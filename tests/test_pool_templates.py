"""The pooling template (max and avg pooling over 1-3 trailing dims: stride, padding, dilation,
ceil_mode, count_include_pad, divisor_override) matched on traced references and checked under
TRITON_INTERPRET=1 at small odd sizes against torch."""

import json
import shutil

import pytest
import torch
import torch.nn.functional as F

from kernel_bakeoff.tasks.backends import kernel_templates as kt
from kernel_bakeoff.tasks.backends.match import Match, find
from tests.test_match_templates import PROBLEM, _load, pytestmark, traced  # noqa: F401

# fn, input shape, keyword arguments of torch's call (kernel_size first)
POOLS = [
    ("max_pool1d", (2, 3, 17), {"kernel_size": 4, "stride": 2, "padding": 1, "dilation": 3}),
    ("max_pool2d", (1, 2, 9, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("max_pool2d", (3, 5, 6), {"kernel_size": (2, 3), "dilation": (2, 1)}),  # unbatched
    ("max_pool3d", (1, 2, 5, 6, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2}),
    ("avg_pool1d", (2, 3, 13), {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True}),
    ("avg_pool2d", (1, 2, 9, 7), {"kernel_size": 3, "stride": 2, "padding": 1,
                                  "count_include_pad": False, "ceil_mode": True}),
    ("avg_pool2d", (2, 1, 5, 5), {"kernel_size": 2, "divisor_override": 3}),
    ("avg_pool3d", (1, 2, 5, 4, 7), {"kernel_size": (3, 2, 3), "stride": 2, "padding": 1}),
]  # fmt: skip


def _impl(tmp_path, fn, name="pool", **config):
    m = Match("pool", "route", "float32", {"w": [1]}, ["in0"], {"fn": fn})
    return m, _load(kt.render_impl(m, dict(kt.space(m)[1], **config)), tmp_path, name)


@pytest.mark.parametrize("case", POOLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(POOLS)])
def test_pool_template_matches_torch(tmp_path, case):
    fn, shape, kw = case
    x = torch.randn(shape)
    want = getattr(F, fn)(x, **kw)
    _, impl = _impl(tmp_path, fn, BLOCK=64)  # 64 outputs a program: several, the last partial
    d, is_max = int(fn[-2]), fn.startswith("max")
    got = impl.pool(x, d, is_max, kw["kernel_size"], kw.get("stride"), kw.get("padding", 0),
                    kw.get("dilation", 1), kw.get("ceil_mode", False),
                    kw.get("count_include_pad", True), kw.get("divisor_override"))  # fmt: skip
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert impl.pool(x.double(), d, is_max, 2, None, 0, 1, False, True, None) is None


def test_max_pool_keeps_a_nan_as_torch_does(tmp_path):
    x = torch.randn(1, 1, 4, 4)
    x[0, 0, 1, 2] = float("nan")
    _, impl = _impl(tmp_path, "max_pool2d")
    got = impl.pool(x, 2, True, 2, None, 0, 1, False, True, None)
    torch.testing.assert_close(got, F.max_pool2d(x, 2), equal_nan=True)


def test_a_pooling_is_matched_and_routed(tmp_path):
    path = tmp_path / "p.py"
    init = "        self.p = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)"
    path.write_text(PROBLEM.format(init=init, args="x", body="self.p(x)",
                                   inputs="torch.randn(2, 3, 9, 9)"))  # fmt: skip
    (m,), notes = find(traced(path))
    assert (m.label, m.reads, m.params["fn"]) == ("pool", ["in0"], "avg_pool2d"), notes
    cand = tmp_path / "cand"
    cand.mkdir()
    shutil.copy2(kt.ROUTE, cand / "op_route.py")
    (cand / "impl.py").write_text(kt.render_impl(m, kt.space(m)[1]))
    (cand / "route.json").write_text(json.dumps({"op": "pool", "epilogue": []}))
    route = _load((cand / "op_route.py").read_text(), cand, "op_route")
    route.Route.engaged = 0
    pools = [torch.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
             torch.nn.MaxPool1d(3, stride=2, ceil_mode=True)]  # fmt: skip
    xs = [torch.randn(2, 3, 9, 9), torch.randn(2, 3, 10)]
    with route.Route():
        got = [p(x) for p, x in zip(pools, xs)]
        _, idx = F.max_pool2d(xs[0], 2, return_indices=True)  # indices: torch's
    for g, p, x in zip(got, pools, xs):
        torch.testing.assert_close(g, p(x), rtol=1e-5, atol=1e-6)
    assert route.Route.engaged == 2 and idx.shape == (2, 3, 4, 4)
