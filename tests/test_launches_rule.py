"""The trusted side's half of "a Triton candidate runs Triton", without a check: which names
the candidate's own files jit (parsed, never imported), the torch-work share, and the honest
kernel templates measured in this process with the harness's own recorder."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
import torch

from kernel_bakeoff.scripts import launches
from kernel_bakeoff.scripts.torch_work import Tally
from kernel_bakeoff.scripts.verdict import Status, Timing, TorchWork, Verdict, WorkloadVerdict
from kernel_bakeoff.tasks.check.language_rule import TORCH_SHARE, ruled
from kernel_bakeoff.tasks.check.triton_sources import own_kernels
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult

KERNELS = '''
import triton
from triton import jit


@triton.autotune(configs=[], key=[])
@triton.jit
def tuned(x):
    pass


@jit
def plain(x):
    pass


@triton.jit(do_not_specialize=["n"])
def special(x, n):
    pass


def raw(x):
    pass


wrapped = triton.jit(raw)
TEXT = """
@triton.jit
def in_a_string(x):
    pass
"""


def helper(x):
    return x
'''


def test_own_kernels_are_the_functions_its_files_jit(tmp_path):
    (tmp_path / "kernel.py").write_text(KERNELS)
    (tmp_path / "frozen").mkdir()
    (tmp_path / "frozen" / "user.py").write_text(
        "import triton\n@triton.jit\ndef user_k(x):\n    pass\n"
    )
    (tmp_path / "broken.py").write_text("def (:\n")  # not parsed, not fatal
    assert own_kernels(tmp_path) == {"tuned", "plain", "special", "raw", "user_k"}
    assert own_kernels(tmp_path / "kernel.py") == {"tuned", "plain", "special", "raw"}
    assert own_kernels(tmp_path / "absent") == set()


def result(path: Path, kernels, work: TorchWork | None) -> CandidateResult:
    timing = Timing(clock="host", sample_count=1, median_ms=1.0, min_ms=1.0, max_ms=1.0,
                    spread_ms=0.0, samples_ms=[1.0])  # fmt: skip
    w = WorkloadVerdict(workload="w", status=Status.PASSED, timing=timing, speedup=2.0,
                        triton_kernels=list(kernels), torch_work=work)  # fmt: skip
    v = Verdict(candidate="c", oracle_sha256="", device="cpu", status=Status.PASSED,
                workloads=[w], speedup=2.0)  # fmt: skip
    ref = CandidateRef(name="c", language="triton", mode="author", path=str(path))
    return CandidateResult(candidate=ref, verdict=v)


def test_a_name_its_files_do_not_jit_or_torch_doing_the_work_is_refused(tmp_path):
    (tmp_path / "kernel.py").write_text(KERNELS)
    assert ruled(result(tmp_path, ["plain"], None)).verdict.passed  # not observed: names only
    stranger = ruled(result(tmp_path, ["plain", "in_a_string", "helper"], None)).verdict
    assert stranger.status is Status.FLAGGED and "helper, in_a_string" in stranger.reason
    small = TorchWork(inputs=1000, torch_read={"sum": 10, "div": 2})
    assert ruled(result(tmp_path, ["plain"], small)).verdict.passed
    limit = int(TORCH_SHARE * 1000)
    big = TorchWork(inputs=1000, torch_read={"_softmax": limit})
    refused = ruled(result(tmp_path, ["plain"], big)).verdict
    assert refused.status is Status.FLAGGED and "aten._softmax read 50%" in refused.reason


def test_torch_work_counts_compute_not_bookkeeping():
    x = torch.randn(4, 8).t()
    tally = Tally()

    def call(x):
        y = torch.empty_like(x.contiguous()).reshape(8, 4)
        y.copy_(x.to(torch.float64).float())  # layout and casts: bookkeeping
        return y + x.sum()  # compute: sum reads 32, add reads 32 + 1

    tally.observe(call, (x,))
    assert tally.summary() == {"inputs": 32, "torch_read": {"add": 33, "sum": 32}}
    assert Tally().summary() == {}
    linear = torch.nn.Linear(8, 3)  # a model's weights count among the call's inputs
    tally = Tally()
    tally.observe(linear, (torch.randn(2, 8),))
    assert tally.summary()["inputs"] == 2 * 8 + 3 * 8 + 3


needs_interpreter = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or os.environ.get("TRITON_INTERPRET") != "1",
    reason="needs triton and its CPU interpreter (TRITON_INTERPRET=1, set by conftest on CPU)",
)


def _templates():
    from kernel_bakeoff.tasks.backends.match import Match

    x3 = torch.randn(3, 5, 300)
    w = torch.rand(300)
    q, k, v = (torch.randn(1, 2, n, 16) for n in (19, 23, 23))
    lin = (torch.randn(3, 11, 29), torch.randn(19, 29), torch.randn(19))
    ce = (torch.randn(7, 300), torch.randint(0, 300, (7,)))
    return [
        (Match("softmax", "route", "float32", {"w": [3, 5, 300]}, ["in0"], {"dim": -1}), "softmax", (x3, -1)),
        (Match("cross_entropy", "route", "float32", {"w": [7, 300]}, ["in0", "in1"]), "cross_entropy", (*ce, "mean")),
        (Match("rms_norm", "route", "float32", {"w": [3, 5, 300]}, ["in0"]), "rms_norm", (x3, (300,), w, 1e-6)),
        (Match("layer_norm", "route", "float32", {"w": [3, 5, 300]}, ["in0"]), "layer_norm", (x3, (300,), w, w, 1e-5)),
        (Match("sum", "route", "float32", {"w": [3, 5, 300]}, ["in0"], {"dim": 1}), "sum", (x3, 1, False)),
        (Match("cumsum", "route", "float32", {"w": [3, 5, 300]}, ["in0"], {"dim": -1}), "cumsum", (x3, -1)),
        (Match("scaled_dot_product_attention", "route", "float32", {"w": [1, 2, 19, 16]}, ["in0"]),
         "scaled_dot_product_attention", (q, k, v, None, 0.0, False, None, False)),
        (Match("linear", "route", "float32", {"w": [3, 11, 29]}, ["in0"], {"epilogue": [{"fn": "relu"}]}),
         "linear", lin),
    ]  # fmt: skip


@needs_interpreter
def test_the_kernel_templates_pass_the_triton_lane_rule(tmp_path):
    """Each template rendered at its default point, called as the child calls a candidate's
    checked calls (counted; observed after the first), then ruled: its own Triton, its work."""
    from kernel_bakeoff.tasks.backends import kernel_templates as kt

    for i, (match, fn_name, args) in enumerate(_templates()):
        path = tmp_path / f"t{i}" / "impl.py"
        path.parent.mkdir()
        path.write_text(kt.render_impl(match, kt.space(match)[1]))
        spec = importlib.util.spec_from_file_location(f"_rule_t{i}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fn, kernels, tally = getattr(module, fn_name), [], Tally()
        with launches.counting(kernels):
            assert fn(*args) is not None, fn_name  # not left to torch
        with launches.counting(kernels):
            tally.observe(fn, args)
        work = TorchWork.model_validate(tally.summary())
        ruled_v = ruled(result(path.parent, sorted(set(kernels)), work)).verdict
        assert kernels and ruled_v.passed, (fn_name, kernels, work, ruled_v.reason)


def test_the_device_trace_says_which_kernels_did_the_calls_work():
    """The profiler's kernels inside the timed calls' windows, by name (the marker's are not
    the call's); the Triton lane asks that its own kernels ran at least half of that time."""
    from tests.test_stream_audit import trace

    events = trace(0, 0.0, 45.0) + trace(1, 1000.0, 49.0)
    for e in events:  # the call's two kernels: its Triton one and torch's; then the marker
        c = e.get("args", {}).get("correlation")
        if e["cat"] == "kernel":
            e["name"] = {1: "_rows", 2: "softmax_warp_forward", 4: "_rows", 5: "at_kernel"}.get(
                c, "marker"
            )
    device_us: dict[str, float] = {}
    from kernel_bakeoff.scripts.stream_audit import overhangs

    overhangs(events, device_us)
    assert device_us == {"_rows": 30.0, "softmax_warp_forward": 14.0, "at_kernel": 18.0}


def test_the_device_share_refuses_a_triton_kernel_beside_torchs(tmp_path):
    (tmp_path / "kernel.py").write_text(KERNELS)
    honest = result(tmp_path, ["plain"], None)
    w = honest.verdict.workloads[0]
    ran = lambda us: honest.model_copy(  # noqa: E731
        update={
            "verdict": honest.verdict.model_copy(
                update={"workloads": [w.model_copy(update={"device_us": us})]}
            )
        }  # fmt: skip
    )
    assert ruled(ran({"plain": 90.0, "gpu_memset": 10.0})).verdict.passed
    assert ruled(ran({"other_name": 90.0})).verdict.passed  # names not comparable: not judged
    refused = ruled(ran({"plain": 1.0, "softmax_warp_forward": 99.0})).verdict
    assert (
        refused.status is Status.FLAGGED
        and "ran 1% of its timed calls' device time" in (refused.reason)
        and "softmax_warp_forward" in refused.reason
    )


def test_the_judge_takes_one_record_per_workload_from_the_channel():
    line = launches.record_line(0, ["_rows", "_rows"], [], {"inputs": 4, "torch_read": {}})
    device = launches.device_line(0, {"_rows": 3.0})
    markers = [(line, 1), (device, 2), ("launches 1 {not json", 3), ("launches 9 {}", 4)]
    ran = launches.records(markers, 3)
    assert ran[0]["triton"] == ["_rows"] and ran[2] == {}
    assert "garbled" in ran[1]
    assert launches.records(markers, 1, kind="device") == [{"_rows": 3.0}]
    named = launches.device_line(0, {"triton": 2.0})  # a kernel may have any name
    assert launches.records([(named, 1)], 1, kind="device") == [{"triton": 2.0}]
    twice = launches.records([(line, 1), (line, 2)], 1)
    assert twice == ["2 launches records came on the harness's channel, not one"]
