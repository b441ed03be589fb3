import os
import subprocess
import sys

import pytest
import torch

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.formats import detect_format, load_spec, module_for
from kernel_bakeoff.scripts.formats.kernelbench import guess_kind
from kernel_bakeoff.scripts.freeze import freeze, load_task
from kernel_bakeoff.scripts.spec import OpKind
from kernel_bakeoff.scripts.verdict import Status

from .conftest import EXAMPLES, ROOT

KB = EXAMPLES / "kernelbench"
PROBLEMS = ("matmul_gelu", "conv2d_relu_bias")


def test_problem_files_are_detected_and_candidates_are_not():
    for name in PROBLEMS:
        assert detect_format(KB / f"{name}.py") == "kernelbench"
    with pytest.raises(BadInput, match="not a kernel this tool can read"):
        detect_format(KB / "candidates" / "matmul_gelu_new.py")


def test_spec_records_entry_kind_and_shapes_of_the_one_workload():
    spec, src = load_spec(KB / "matmul_gelu.py")
    assert spec.format == "kernelbench" and spec.language == "torch"
    assert spec.entry == "matmul_gelu.py:Model" and spec.reference is None
    assert spec.kind is OpKind.gemm
    (wl,) = spec.workloads
    assert wl.name == "default"
    assert wl.extra["inputs"] == [{"shape": [64, 256], "dtype": "float32"}]
    assert [(i.name, i.shape) for i in spec.inputs] == [("arg0", [64, 256])]
    assert spec.extra["init_inputs"] == [{"value": 256}, {"value": 128}]
    # The staged source holds the problem alone, not its neighbours or candidates.
    assert sorted(p.name for p in src.iterdir()) == ["matmul_gelu.py"]

    conv, _ = load_spec(KB / "conv2d_relu_bias.py")
    assert conv.kind is OpKind.conv
    assert conv.extra["init_inputs"][-1] == {"value": [16, 1, 1]}


@pytest.mark.parametrize(
    "stem, source, kind",
    [
        ("23_Softmax", "", OpKind.reduction),
        ("89_cumsum", "", OpKind.scan),
        ("problem", "self.attn = nn.MultiheadAttention(8, 2)", OpKind.attention),
        ("problem", "return torch.tanh(x)", OpKind.elementwise),
        ("problem", "return x.flip(0)", OpKind.other),
    ],
)
def test_kind_is_guessed_from_the_name_then_the_source(tmp_path, stem, source, kind):
    assert guess_kind(tmp_path / f"{stem}.py", source) is kind


def test_inputs_are_deterministic_per_seed():
    spec, src = load_spec(KB / "conv2d_relu_bias.py")
    fmt = module_for(spec.format)
    wl = spec.workloads[0]
    a, b, c = (fmt.make_inputs(spec, src, wl, s, "cpu") for s in (3, 3, 4))
    assert a[0].shape == (8, 3, 24, 24) and a[0].dtype == torch.float32
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])


AGREEMENT = """
import sys, torch
from pathlib import Path
from kernel_bakeoff.scripts import compare
from kernel_bakeoff.scripts.formats import load_spec, module_for
kb, name = Path(sys.argv[1]), sys.argv[2]
spec, src = load_spec(kb / f"{name}.py")
fmt = module_for(spec.format)
ref = fmt.load_callable(spec, src, spec.entry, "cpu")
cand = fmt.load_callable(spec, src, spec.entry, "cpu", candidate=kb / "candidates" / f"{name}_new.py")
a, b = dict(ref.module.named_parameters()), dict(cand.module.named_parameters())
same = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
inputs = fmt.make_inputs(spec, src, spec.workloads[0], 11, "cpu")
out, want = cand(*inputs), ref(*inputs)
again = ref(*inputs)  # the reference against itself: whether this process's matmul is repeatable
print(same, out.shape == want.shape, compare.rel_error(out, want), spec.tolerance_for("float32"),
      compare.rel_error(again, want), torch.get_num_threads())
"""


@pytest.mark.parametrize("name", PROBLEMS)
def test_candidate_gets_the_same_weights_and_agrees(name):
    # In a fresh process with a clean environment. Made in the test process after other tests
    # had run candidates in it (torch.compile included, tests/inprocess_check.py), the outputs
    # once came out up to 6e-5 apart in relative terms; in a fresh process that inherited the
    # test process's environment, once 4.4e-5 (CI of cc83270, after 2/3 of the suite); alone
    # they agree to 4e-8. Cause not found: the message says whether the reference itself
    # repeated in that process, and on how many threads.
    env = {
        k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TRITON_INTERPRET") if k in os.environ
    }
    done = subprocess.run(
        [sys.executable, "-c", AGREEMENT, str(KB), name],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    same, shapes, error, tol, repeat, threads = done.stdout.split()
    assert same == "True" and shapes == "True"
    # As the harness judges: addmm for linear rounds differently, within the fp32 bound.
    assert float(error) <= float(tol), f"reference against itself {repeat}, {threads} threads"


def test_candidate_without_model_new_is_bad_input(tmp_path):
    spec, src = load_spec(KB / "matmul_gelu.py")
    wrong = tmp_path / "cand.py"
    wrong.write_text("class Model:\n    pass\n")
    with pytest.raises(BadInput, match="ModelNew"):
        module_for(spec.format).load_callable(spec, src, spec.entry, "cpu", candidate=wrong)


def test_freeze_and_verify(tmp_path):
    task = freeze(KB / "conv2d_relu_bias.py", tmp_path / "conv")
    spec, src, baseline = load_task(task)
    assert spec.format == "kernelbench"
    assert sorted(p.name for p in src.iterdir()) == ["conv2d_relu_bias.py"]
    assert baseline.workloads["default"].status is Status.PASSED
    again = freeze(KB / "conv2d_relu_bias.py", tmp_path / "conv")
    assert again == task  # the same input frozen again is recognised, not refused


MISMATCHED = """import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return self.linear(x)
"""


def test_a_constructor_that_does_not_match_is_named_in_one_line(tmp_path):
    spec, src = load_spec(KB / "matmul_gelu.py")
    wrong = tmp_path / "cand.py"
    wrong.write_text(MISMATCHED)
    with pytest.raises(BadInput) as caught:
        module_for(spec.format).load_callable(spec, src, spec.entry, "cpu", candidate=wrong)
    said = str(caught.value)
    assert "ModelNew(features) does not match the problem's constructor arguments" in said
    assert "get_init_inputs() gives (" in said and "\n" not in said


def test_a_check_of_a_mismatched_constructor_says_one_line_and_no_traceback(tmp_path):
    from functools import partial

    from kernel_bakeoff.scripts.check import check
    from kernel_bakeoff.scripts.freeze import measure_baseline
    from kernel_bakeoff.scripts.verdict import Status

    small = {"samples": 5, "warmup": 1, "trials": 1}
    task = freeze(
        KB / "matmul_gelu.py", tmp_path / "mm", measure=partial(measure_baseline, **small),
        other_sizes=False,
    )  # fmt: skip
    wrong = tmp_path / "cand.py"
    wrong.write_text(MISMATCHED)
    verdict = check(task, wrong, **small)
    assert verdict.status is Status.COMPILE_ERROR
    assert "ModelNew(features) does not match" in verdict.reason and "\n" not in verdict.reason
    assert "Traceback" not in verdict.output_tail, verdict.output_tail


def test_freeze_without_the_oracle_probe_can_read_its_sources(tmp_path):
    """The staged sources' mkdtemp mode (0700) was opened to the box only by the probe's sandbox
    call: a freeze without it failed its own baseline check where the box runs as nobody."""
    task = freeze(KB / "matmul_gelu.py", tmp_path / "t", other_sizes=False, probe_oracle=False)
    assert load_task(task)[2].workloads["default"].status is Status.PASSED
