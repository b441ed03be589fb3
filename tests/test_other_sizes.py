"""Sizes the user did not list: freeze probes the reference at other sizes and keeps those it
accepts as correctness-only workloads; a candidate wrong at any of them is refused."""

import json

import pytest
import torch

from kernel_bakeoff.scripts import sizes
from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.formats import load_spec, module_for
from kernel_bakeoff.scripts.freeze import freeze, load_task
from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict

# Sums rows in pairs: its reference refuses an odd number of rows.
PAIRS = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.reshape(-1, 2, x.shape[-1]).sum(1)


batch_size = 8
dim = 16


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""

HONEST = """
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x[0::2] + x[1::2]
"""

# Right at the listed 8 rows only: the leading dimension written into the kernel.
HARD_CODED = """
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.reshape(4, 2, 16).sum(1)
"""

# Right at the listed size, a cheaper (wrong) path at any other.
SPECIAL_CASED = """
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if x.shape[0] == 8:
            return x[0::2] + x[1::2]
        return 2 * x[0::2]
"""


def _write(path, text):
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def pairs_task(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairs")
    return freeze(_write(root / "pairs.py", PAIRS), root / "task")


def test_freeze_keeps_the_sizes_the_reference_accepts_and_records_the_one_it_refuses(pairs_task):
    spec, _, baseline = load_task(pairs_task)
    assert [(w.name, w.timed) for w in spec.workloads] == [
        ("default", True),
        ("default@batch_size=4", False),
        ("default@batch_size=16", False),
    ]
    probed = {p.workload: p for p in spec.sizes_probed}
    assert probed["default@batch_size=4"].checked and probed["default@batch_size=16"].checked
    odd = probed["default@batch_size=7"]
    assert not odd.checked and "the reference raised RuntimeError" in odd.reason
    # The baseline is timed at the listed size only; the others are checked and not timed.
    assert list(baseline.workloads) == ["default"]
    assert set(baseline.checked_only) == {"default@batch_size=4", "default@batch_size=16"}
    on_disk = json.loads((pairs_task / "baseline.json").read_text())
    assert "median_ms" not in on_disk["checked_only"]["default@batch_size=4"]
    assert "default@batch_size=7 (the reference raised" in sizes.describe(spec)
    # Frozen again from the same input: recognised, though the frozen spec has more workloads.
    assert freeze(pairs_task.parent / "pairs.py", pairs_task) == pairs_task


def test_an_honest_candidate_passes_with_the_sizes_listed_and_speedup_from_timed_ones(
    pairs_task, tmp_path
):
    verdict = check(pairs_task, _write(tmp_path / "honest.py", HONEST), samples=5)
    assert verdict.status is Status.PASSED, verdict.reason
    assert verdict.sizes_checked == ["default@batch_size=4", "default@batch_size=16"]
    assert "sizes_checked" in json.loads(verdict.model_dump_json())
    timed, *checked = verdict.workloads
    assert timed.timing is not None and timed.speedup is not None
    assert all(w.checked_only and w.timing is None and w.speedup is None for w in checked)
    assert all(w.max_rel_error is not None and w.max_rel_error <= w.tolerance for w in checked)
    assert verdict.speedup == pytest.approx(timed.speedup)  # the timed workload's alone


@pytest.mark.parametrize(
    "source, status, size",
    [
        (HARD_CODED, Status.RUNTIME_ERROR, "default@batch_size=4"),
        (SPECIAL_CASED, Status.INCORRECT_NUMERICAL, "default@batch_size=4"),
    ],
)
def test_a_candidate_right_only_at_the_listed_size_is_refused_naming_the_size(
    pairs_task, tmp_path, source, status, size
):
    verdict = check(pairs_task, _write(tmp_path / "cand.py", source), samples=5)
    assert verdict.status is status
    assert verdict.reason.startswith(f"workload {size!r}: ")
    listed = verdict.workloads[0]
    assert listed.workload == "default" and listed.status is Status.PASSED
    assert verdict.speedup is None


# A reference whose parameters are sized by the batch: it works at the listed size only.
BATCH_SIZED = """
import torch
import torch.nn as nn

batch_size = 6
dim = 4


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(batch_size, dim))

    def forward(self, x):
        return x * self.w


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""


def test_a_reference_that_works_at_one_size_only_gets_no_other_size(tmp_path):
    spec, src = load_spec(_write(tmp_path / "batch_sized.py", BATCH_SIZED))
    out = sizes.add_other_sizes(spec, src, device="cpu")
    assert [w.name for w in out.workloads] == ["default"]
    assert [(p.workload, p.checked) for p in out.sizes_probed] == [
        ("default@batch_size=3", False),
        ("default@batch_size=12", False),
        ("default@batch_size=5", False),
    ]
    assert sizes.describe(out).startswith("no other size checked")


# Literal sizes (no module-level size to set): rows are cut, or drawn again and concatenated.
LITERAL = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, logits, target, weight):
        return nn.functional.cross_entropy(logits, target, weight=weight, reduction="none")


def get_inputs():
    return [torch.randn(6, 10), torch.randint(0, 10, (6,)), torch.rand(10)]


def get_init_inputs():
    return []
"""


def test_without_a_size_global_every_input_led_by_the_size_is_resized_alike(tmp_path):
    spec, src = load_spec(_write(tmp_path / "literal.py", LITERAL))
    fmt = module_for(spec.format)
    variants = fmt.other_sizes(spec, src)
    assert [v.workload.name for v in variants] == [
        "default@dim0=3",
        "default@dim0=12",
        "default@dim0=5",
    ]
    assert [v.larger for v in variants] == [False, True, False]
    assert variants[1].workload.extra["inputs"][0] == {"shape": [12, 10], "dtype": "float32"}
    listed = fmt.make_inputs(spec, src, spec.workloads[0], 5, "cpu")
    for variant, n in zip(variants, (3, 12, 5)):
        got = fmt.make_inputs(spec, src, variant.workload, 5, "cpu")
        assert [tuple(t.shape) for t in got] == [(n, 10), (n,), (10,)]
        rows = min(n, 6)  # the rows the listed size draws first, as it draws them
        assert torch.equal(got[0][:rows], listed[0][:rows])
        assert torch.equal(got[1][:rows], listed[1][:rows]) and torch.equal(got[2], listed[2])
    doubled = fmt.make_inputs(spec, src, variants[1].workload, 5, "cpu")
    assert not torch.equal(doubled[0][6:], doubled[0][:6])  # drawn again, not repeated
    assert [w.name for w in sizes.add_other_sizes(spec, src, "cpu").workloads][1:] == [
        v.workload.name for v in variants
    ]


def test_a_larger_size_over_the_memory_bound_is_not_tried(tmp_path, monkeypatch):
    monkeypatch.setattr(sizes, "MAX_INPUT_BYTES", 600)  # the listed inputs take 512 bytes
    spec, src = load_spec(_write(tmp_path / "pairs.py", PAIRS))
    out = sizes.add_other_sizes(spec, src, device="cpu")
    probed = {p.workload: p for p in out.sizes_probed}
    assert probed["default@batch_size=4"].checked
    assert probed["default@batch_size=16"].reason.startswith("not tried: its inputs would take")
    assert [w.name for w in out.workloads] == ["default", "default@batch_size=4"]


# Aborts its process at 5 rows, raises at 12: the probe's own process dies, the next goes on.
CRASHING = """
import os
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if x.shape[0] == 5:
            os.abort()
        if x.shape[0] > 8:
            raise ValueError("too many rows")
        return x + 1


batch_size = 6
dim = 4


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("warm", ["1", "0"])
def test_the_isolated_probe_survives_a_reference_that_kills_its_process(
    warm, tmp_path, monkeypatch, forked
):
    """Forked by the warm server (one fork up to the abort, a fresh one for the rest), or, with
    warm starts off, in fresh interpreters: the same answers either way."""
    monkeypatch.setenv("BAKEOFF_WARM_START", warm)
    spec, src = load_spec(_write(tmp_path / "crashing.py", CRASHING))
    out = sizes.add_other_sizes(spec, src, device="cpu", isolated=True)
    assert forked == (["kernel_bakeoff.scripts.sizes"] * 2 if warm == "1" else [])
    probed = {p.workload: p for p in out.sizes_probed}
    assert list(probed) == [
        "default@batch_size=3",
        "default@batch_size=12",
        "default@batch_size=5",
    ]
    assert probed["default@batch_size=3"].checked
    assert "ValueError: too many rows" in probed["default@batch_size=12"].reason
    crashed = probed["default@batch_size=5"].reason
    assert crashed.startswith("the reference's process ") and "SIGABRT" in crashed
    assert [w.name for w in out.workloads] == ["default", "default@batch_size=3"]


def test_native_specs_vary_the_first_dimension_of_the_first_workload(frozen_rmsnorm):
    spec, _, baseline = load_task(frozen_rmsnorm)
    untimed = [(w.name, w.dims) for w in spec.workloads if not w.timed]
    assert untimed == [
        ("tokens_256@T=128", {"T": 128, "H": 1024}),
        ("tokens_256@T=512", {"T": 512, "H": 1024}),
        ("tokens_256@T=255", {"T": 255, "H": 1024}),
    ]
    assert set(baseline.workloads) == {"tokens_256", "tokens_1k"}


# An op directory whose kernel drops the last row of an odd count; its reference does not.
NATIVE_KERNEL = """
import torch


def double(x):
    out = torch.zeros_like(x)
    even = x.shape[0] - x.shape[0] % 2
    out[:even] = 2 * x[:even]
    return out
"""
NATIVE_REF = """
def double(x):
    return 2 * x
"""
NATIVE_TOML = """
name = "double"
language = "torch"
entry = "kernel.py:double"
reference = "ref.py:double"

[[inputs]]
name = "x"
shape = ["M", 8]

[[workloads]]
name = "m16"
dims = { M = 16 }
"""


def test_a_size_the_frozen_baseline_itself_fails_is_dropped_with_its_reason(tmp_path):
    op = tmp_path / "double"
    op.mkdir()
    for name, text in (
        ("kernel.py", NATIVE_KERNEL),
        ("ref.py", NATIVE_REF),
        ("op.toml", NATIVE_TOML),
    ):
        _write(op / name, text)
    spec, _, baseline = load_task(freeze(op, tmp_path / "task"))
    assert [w.name for w in spec.workloads] == ["m16", "m16@M=8", "m16@M=32"]
    odd = next(p for p in spec.sizes_probed if p.workload == "m16@M=15")
    assert not odd.checked and odd.reason.startswith("the frozen baseline fails there: trial 1")
    assert set(baseline.checked_only) == {"m16@M=8", "m16@M=32"}


def test_a_checked_only_workload_passes_without_timing_and_no_other_does():
    WorkloadVerdict(workload="w@n=3", status=Status.PASSED, checked_only=True)
    with pytest.raises(ValueError, match="carries its timing"):
        WorkloadVerdict(workload="w", status=Status.PASSED)
    with pytest.raises(ValueError, match="no timing and no speedup"):
        WorkloadVerdict(workload="w@n=3", status=Status.PASSED, checked_only=True, speedup=2.0)


def _timing(ms: float) -> Timing:
    return Timing(
        clock="host",
        sample_count=4,
        median_ms=ms,
        min_ms=ms,
        max_ms=ms,
        spread_ms=0.0,
        samples_ms=[ms] * 4,
    )


def test_ranking_ignores_checked_only_workloads(tmp_path):
    from kernel_bakeoff.tasks.check.standing import baseline_stats
    from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
    from kernel_bakeoff.tasks.models.run import LaneResult, Review
    from kernel_bakeoff.tasks.report.ranking import rank

    spec = {"name": "op", "entry": "kernel.py:op", "language": "torch",
            "workloads": [{"name": "a"}, {"name": "a@n=3", "timed": False}]}  # fmt: skip
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    base = {"median_ms": 1.0, "samples_ms": [1.0, 1.0, 1.01, 0.99]}
    (tmp_path / "baseline.json").write_text(json.dumps({"workloads": {"a": base}}))
    assert baseline_stats(tmp_path)[0] == {"a": 1.0}
    workloads = [
        WorkloadVerdict(
            workload="a", status=Status.PASSED, timing=_timing(0.5), baseline_ms=1.0, speedup=2.0
        ),
        WorkloadVerdict(workload="a@n=3", status=Status.PASSED, checked_only=True),
    ]
    verdict = Verdict(
        candidate="fast",
        oracle_sha256="x",
        device="cpu",
        status=Status.PASSED,
        workloads=workloads,
        speedup=2.0,
    )
    result = CandidateResult(
        candidate=CandidateRef(name="fast", language="torch", mode="optimize", path="/runs/fast"),
        verdict=verdict,
    )
    lane = LaneResult(
        key="torch",
        language="torch",
        mode="optimize",
        status="completed",
        reason="",
        cache_key="k",
        candidates=[result],
        review=Review(candidate="fast", decision="accepted"),
    )
    rows, winner = rank([lane], None, tmp_path)
    assert winner is not None and winner.name == "fast" and winner.speedup == 2.0
    assert rows[0].speedups == {"a": 2.0}


def test_the_frozen_spec_round_trips_and_lists_only_what_the_input_lists():
    spec = OpSpec.model_validate(
        {
            "name": "x",
            "language": "torch",
            "entry": "k.py:f",
            "workloads": [{"name": "a"}, {"name": "a@n=3", "timed": False}],
            "sizes_probed": [{"workload": "a@n=3", "checked": True}],
        }
    )
    assert [w.name for w in spec.as_listed().workloads] == ["a"]
    assert spec.as_listed().sizes_probed == []
    with pytest.raises(ValueError, match="at least one workload is timed"):
        OpSpec.model_validate(
            {**spec.model_dump(), "workloads": [{"name": "a@n=3", "timed": False}]}
        )
