"""Fused linear + cross-entropy without a model: matched on a traced reference (besides its
linear and its cross-entropy), a library's match only (no template), and the route that hands
both calls to one function."""

import json
import shutil

import torch
import torch.nn.functional as F

from kernel_bakeoff.tasks.backends import kernel_templates as kt
from kernel_bakeoff.tasks.backends import lib_liger
from kernel_bakeoff.tasks.backends.match import find
from kernel_bakeoff.tasks.backends.triton_templates import templated
from tests.test_match_templates import PROBLEM, _load, pytestmark, traced  # noqa: F401


def _problem(tmp_path, body, extra=""):
    path = tmp_path / "p.py"
    init = "        self.head = nn.Linear(24, 40)"
    inputs = "torch.randn(16, 24), torch.randint(0, 40, (16,))"
    path.write_text(PROBLEM.format(init=init, args="x, t", body=body, inputs=inputs) + extra)
    return path


def test_linear_then_cross_entropy_is_one_fused_match(tmp_path):
    found, _ = find(traced(_problem(tmp_path, "F.cross_entropy(self.head(x), t, reduction='sum')")))
    assert [m.label for m in found] == ["linear", "cross_entropy", "linear_cross_entropy"]
    fused = found[-1]
    assert fused.params == {"reduction": "sum", "has_bias": True}
    assert (
        fused.reads[0] == "in0"
        and fused.reads[-1] == "in1"
        and fused.shapes == {"default": [16, 24]}
    )
    # a library takes it; no template claims it (the templates see its two parts)
    assert [m.op for m in lib_liger.BACKEND.covered(found)] == [
        "cross_entropy",
        "linear_cross_entropy",
    ]
    assert [m.op for m in templated(found)] == ["linear", "cross_entropy"]


def test_logits_read_elsewhere_or_smoothed_are_not_fused(tmp_path):
    body = "F.cross_entropy(self.head(x), t, label_smoothing=0.1)"
    found, _ = find(traced(_problem(tmp_path, body)))
    assert "linear_cross_entropy" not in [m.op for m in found]
    body = "(lambda z: F.cross_entropy(z, t) + z.sum())(self.head(x))"
    found, _ = find(traced(_problem(tmp_path, body)))
    assert "linear_cross_entropy" not in [m.op for m in found]


# The route's other side, written out for the test: the same arithmetic as torch's two calls,
# so the test checks that both calls reach it with their operands, and that a call it declines
# (returns None for) still gets torch's answer.
IMPL = """
import torch.nn.functional as F

SEEN = []


def linear_cross_entropy(x, w, bias, target, reduction):
    if reduction == "none":
        return None
    SEEN.append((tuple(x.shape), tuple(w.shape), bias is not None, reduction))
    return F.cross_entropy(F.linear(x, w, bias), target, reduction=reduction)
"""


def test_route_hands_the_linear_and_its_cross_entropy_to_one_function(tmp_path):
    route_dir = tmp_path / "cand"
    route_dir.mkdir()
    shutil.copy2(kt.ROUTE, route_dir / "op_route.py")
    (route_dir / "impl.py").write_text(IMPL)
    (route_dir / "route.json").write_text(json.dumps({"op": "linear_cross_entropy"}))
    route = _load((route_dir / "op_route.py").read_text(), route_dir, "op_route")
    route.Route.engaged = 0
    head, x, t = torch.nn.Linear(24, 40), torch.randn(16, 24), torch.randint(0, 40, (16,))
    with torch.no_grad():
        want = F.cross_entropy(head(x), t, reduction="sum")
        with route.Route():
            got = F.cross_entropy(head(x), t, reduction="sum")
            none = F.cross_entropy(head(x), t, reduction="none")  # declined: torch's
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(none, F.cross_entropy(head(x), t, reduction="none"))
    assert route.Route.engaged == 1
    assert route.Route.impls["impl.py"].SEEN == [((16, 24), (40, 24), True, "sum")]
