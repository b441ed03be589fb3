"""What a comparison of outputs cannot catch, and the freeze can: an output's structure (a tuple
holding the output is not the output), an oracle that a constant passes (said at freeze, in
spec.json, in every report), and the input distributions that let a user make it discriminate,
used by every check."""

import json
import shutil
from pathlib import Path

import pytest

from .conftest import EXAMPLES, cli_in_process

TS = EXAMPLES / "flashinfer_traceset"


def _native(tmp: Path, edit=lambda text: text, files: dict | None = None) -> Path:
    """A copy of examples/rmsnorm_torch with op.toml edited and files added or replaced."""
    op = shutil.copytree(EXAMPLES / "rmsnorm_torch", tmp / "op")
    (op / "op.toml").write_text(edit((op / "op.toml").read_text()))
    for name, text in (files or {}).items():
        (op / name).write_text(text)
    return op


# Output structure: a tuple holding the output is not the output.

TUPLE_KERNEL = (
    "import torch\n\n\ndef rmsnorm(x, weight, eps: float = 1e-6):\n"
    "    variance = x.pow(2).mean(dim=-1, keepdim=True)\n"
    "    return (x * torch.rsqrt(variance + eps) * weight,)\n"
)


@pytest.mark.parametrize("reference_returns", ["a tensor", "a tuple of 1"])
def test_a_tuple_and_a_tensor_are_a_structure_mismatch(tmp_path, reference_returns, capfd):
    plain = (EXAMPLES / "rmsnorm_torch" / "kernel.py").read_text()
    tupled = reference_returns == "a tuple of 1"
    op = _native(tmp_path, files={"kernel.py": TUPLE_KERNEL if tupled else plain})
    candidate = tmp_path / "candidate.py"
    candidate.write_text(plain if tupled else TUPLE_KERNEL)
    done = cli_in_process(
        capfd, "check", str(op), str(candidate), "--json", "--samples", "5", cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    verdict = json.loads(done.stdout)
    other = "a tensor" if tupled else "a tuple of 1"
    assert verdict["status"] == "INCORRECT_SHAPE"
    assert f"it returns {other}, the reference returns {reference_returns}" in verdict["reason"]


# Degenerate oracles: said at freeze, in spec.json, in --json and in every report.

COSINE_OP = """name = "cosine_loss"
kind = "reduction"
language = "torch"
entry = "kernel.py:loss"

[[inputs]]
name = "pred"
shape = ["B", "D"]
dtype = "bfloat16"

[[inputs]]
name = "target"
shape = ["B", "D"]
dtype = "bfloat16"

[[workloads]]
name = "rows"
dims = { B = 128, D = 4096 }
"""

COSINE_KERNEL = """import torch


def loss(pred, target):
    return torch.mean(1 - torch.nn.functional.cosine_similarity(pred, target, dim=1))
"""

CONSTANT = (
    "import torch\n\n\ndef loss(pred, target):\n    return torch.ones((), dtype=pred.dtype)\n"
)


def test_a_degenerate_oracle_is_said_at_freeze_and_in_every_report(tmp_path, capfd):
    from kernel_bakeoff.flows.report import oracle_warnings

    op = tmp_path / "cosine"
    op.mkdir()
    (op / "op.toml").write_text(COSINE_OP)
    (op / "kernel.py").write_text(COSINE_KERNEL)
    task = tmp_path / "task"
    done = cli_in_process(capfd, "freeze", str(op), "--out", str(task), "--json")
    assert done.returncode == 0, done.stderr
    warning = next(ln for ln in done.stderr.splitlines() if "warning" in ln)
    assert "the oracle does not discriminate: a constant passes the check at rows" in warning
    assert json.loads(done.stdout)["degenerate"] in warning
    recorded = json.loads((task / "spec.json").read_text())["degenerate"]
    assert recorded["message"] in warning and recorded["workloads"]["rows"]["moved"]["seeds"] <= 1
    assert oracle_warnings(task) == [recorded["message"]]  # report.md, html, --json, terminal
    # what the warning is about: a candidate that never reads its inputs passes
    constant = tmp_path / "constant.py"
    constant.write_text(CONSTANT)
    checked = cli_in_process(capfd, "check", str(task), str(constant), "--samples", "5")
    assert "PASSED" in checked.stdout and recorded["message"] in checked.stdout


def test_the_shipped_examples_are_not_degenerate():
    from kernel_bakeoff.scripts.formats import load_spec
    from kernel_bakeoff.scripts.oracle_probe import probe

    for path, options in [
        (EXAMPLES / "rmsnorm_torch", {}),
        (EXAMPLES / "residual_norm_torch", {}),
        (EXAMPLES / "gemm_bias_gelu", {}),
        (EXAMPLES / "softmax_triton", {}),
        (EXAMPLES / "rmsnorm_cuda", {}),
        (EXAMPLES / "kernelbench" / "matmul_gelu.py", {}),
        (EXAMPLES / "kernelbench" / "conv2d_relu_bias.py", {}),
        (TS, {"op": "rmsnorm_h256"}),
    ]:
        spec, src = load_spec(path, **options)
        assert probe(spec, src, "cpu") is None, path


def test_input_distributions_reach_every_check(tmp_path, capfd):
    """A reference that accepts only inputs in [5, 6] (rand + 5 in float32): frozen (its own check, the other sizes,
    the oracle probe) only because the workload draws them so."""
    picky = (
        "def rmsnorm(x, weight, eps: float = 1e-6):\n"
        "    assert float(x.min()) >= 5 and float(x.max()) <= 6, 'drawn outside [5, 6]'\n"
        "    variance = x.pow(2).mean(dim=-1, keepdim=True)\n"
        "    return x * (variance + eps).rsqrt() * weight\n"
    )
    draws = 'draws = { x = { init = "rand", offset = 5.0 } }\n'
    op = _native(
        tmp_path,
        lambda s: s.replace(
            "dims = { T = 256, H = 1024 }\n", "dims = { T = 256, H = 1024 }\n" + draws
        ).replace("dims = { T = 1024, H = 512 }\n", "dims = { T = 1024, H = 512 }\n" + draws),
        {"kernel.py": picky},
    )
    done = cli_in_process(capfd, "freeze", str(op), "--out", str(tmp_path / "task"))
    assert done.returncode == 0, done.stderr
    assert "PASSED" in done.stdout
    # no warning about the oracle; one about this machine's load (a noisy frozen baseline) is
    # the freeze's to give on a busy machine and says nothing of the draws
    warnings = [ln for ln in done.stderr.splitlines() if "warning" in ln]
    assert [w for w in warnings if "the machine was busy" not in w] == [], done.stderr
    # the other sizes are drawn as the workload they vary, so the reference accepts them too
    assert "drawn outside" not in done.stdout + done.stderr, done.stdout + done.stderr
    spec = json.loads((tmp_path / "task" / "spec.json").read_text())
    assert [p for p in spec["sizes_probed"] if not p["checked"]] == [], spec["sizes_probed"]


def test_offset_and_draws_shape_the_inputs():
    from kernel_bakeoff.scripts.program import native_inputs
    from kernel_bakeoff.scripts.spec import OpSpec

    spec = OpSpec(
        name="op",
        language="torch",
        entry="k.py:f",
        inputs=[
            {"name": "x", "shape": [1000], "offset": -3.0},
            {"name": "n", "shape": [1000], "dtype": "int32"},
        ],
        workloads=[
            {"name": "plain", "dims": {}},
            {
                "name": "drawn",
                "draws": {"x": {"init": "rand", "scale": 2.0}, "n": {"low": 7, "high": 9}},
            },
        ],
    )
    x, n = native_inputs(spec, spec.workload("plain"), 0, "cpu")
    assert -3.5 < float(x.mean()) < -2.5 and set(n.tolist()) <= {0, 1}
    x, n = native_inputs(spec, spec.workload("drawn"), 0, "cpu")
    assert float(x.min()) >= -3.0 and float(x.max()) <= -1.0 and set(n.tolist()) == {7, 8}
