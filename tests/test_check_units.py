"""The harness's arithmetic without processes: comparisons, projections, timing checks, tensor files."""

import os
import subprocess
import sys

import pytest
import torch

from kernel_bakeoff.scripts import compare, tensorfile, timing
from kernel_bakeoff.scripts.verdict import Status

from .conftest import ROOT

TOL = {"float32": 2e-5, "float16": 5e-3, "bfloat16": 2e-2}.__getitem__


def test_compare_accepts_rounding_and_refuses_lower_precision():
    ref = torch.randn(256, 256, dtype=torch.float64).float()
    rounded = (ref.double() * (1 + 1e-7)).float()
    assert compare.compare([rounded], [ref], TOL)[0] is None
    status, reason, err = compare.compare([ref.bfloat16().float()], [ref], TOL)
    assert status is Status.INCORRECT_NUMERICAL and err > 2e-5 and "float32" in reason
    assert (
        compare.compare([ref.bfloat16()], [ref.bfloat16()], TOL)[0] is None
    )  # bf16 op, bf16 bound


def test_compare_names_shape_dtype_count_and_nonfinite():
    ref = torch.ones(4, 4)
    assert compare.compare([torch.ones(4, 5)], [ref], TOL)[0] is Status.INCORRECT_SHAPE
    assert compare.compare([ref, ref], [ref], TOL)[0] is Status.INCORRECT_SHAPE
    assert compare.compare([ref.double()], [ref], TOL)[0] is Status.INCORRECT_DTYPE
    nan = ref.clone()
    nan[1, 2] = float("nan")
    status, reason, _ = compare.compare([nan], [ref], TOL)
    assert status is Status.INCORRECT_NUMERICAL and "1 NaN/Inf" in reason
    ref_inf = ref.clone()
    ref_inf[0, 0] = float("inf")
    assert (
        compare.compare([ref_inf.clone()], [ref_inf], TOL)[0] is None
    )  # same Inf where the reference has it
    assert compare.compare([ref], [ref_inf], TOL)[0] is Status.INCORRECT_NUMERICAL


def test_only_plain_tensors_on_the_op_device_are_outputs():
    class Sub(torch.Tensor):
        pass

    assert compare.type_problem(torch.ones(2), "cpu") is None
    assert "plain torch.Tensor" in compare.type_problem(torch.ones(2).as_subclass(Sub), "cpu")
    assert "plain torch.Tensor" in compare.type_problem([1.0, 2.0], "cpu")
    assert "is on cpu" in compare.type_problem(torch.ones(2), "cuda")


def test_same_bits_sees_nan_equal_and_signed_zero_different():
    a = torch.tensor([float("nan"), 0.0])
    assert compare.same_bits(a, a.clone())
    assert not compare.same_bits(a, torch.tensor([float("nan"), -0.0]))


def test_projections_pass_honest_error_and_catch_stale_outputs():
    ref = torch.randn(64, 128)
    project = compare.Projector(7, "cpu")
    noise = torch.randn_like(ref)
    honest = ref + 1e-6 * ref.norm() * noise / noise.norm()  # error 1e-6 of the norm
    assert compare.projection_problem(project(honest), ref, project, 2e-5) is None
    stale = torch.randn(64, 128)
    assert compare.projection_problem(project(stale), ref, project, 2e-5)
    half = ref.clone()
    half[32:] = 0
    assert compare.projection_problem(project(half), ref, project, 2e-5)
    assert compare.Projector(7, "cpu")(ref) == project(ref)  # judge and child draw the same
    assert compare.Projector(8, "cpu")(ref) != project(ref)


def test_projection_vectors_come_in_blocks_drawn_from_per_block_seeds(monkeypatch):
    monkeypatch.setattr(compare.Projector, "BLOCK", 1000)
    monkeypatch.setattr(compare.Projector, "CACHE_BYTES", 2 * compare.PROJECTIONS * 1000 * 8)
    x = torch.randn(2500, dtype=torch.float64)
    expected = torch.zeros(compare.PROJECTIONS, dtype=torch.float64)
    for start in (0, 1000, 2000):
        gen = torch.Generator().manual_seed(11 + start)
        part = x[start : start + 1000]
        w = torch.randn(compare.PROJECTIONS, part.numel(), generator=gen, dtype=torch.float32)
        expected += w.to(torch.float64) @ part  # drawn in float32, summed in float64
    project = compare.Projector(11, "cpu")
    assert project(x) == expected.tolist()
    assert len(project._kept) == 2  # the third block is drawn again each time, the same
    assert project(x) == expected.tolist()


def timing_of(samples, wall, clock="host"):
    return timing.summarize(samples, clock, wall)


def test_summary_keeps_the_raw_samples_and_their_spread():
    t = timing_of([1.0, 2.0, 3.0, 4.0, 100.0], 1.0)
    assert (t.median_ms, t.min_ms, t.max_ms, t.sample_count) == (3.0, 1.0, 100.0, 5)
    assert t.spread_ms == 2.0 and t.samples_ms == [1.0, 2.0, 3.0, 4.0, 100.0]


def test_timing_problems_floor_and_wall_clock():
    honest = timing_of([1.0, 1.1, 0.9], wall=0.8)
    assert timing.timing_problem(honest, floor=0.1) is None
    assert "physical floor" in timing.timing_problem(honest, floor=5.0)
    hidden = timing_of([0.01, 0.01, 0.01], wall=1.0, clock="cuda_event")
    assert "wall clock" in timing.timing_problem(hidden, floor=0.0)
    launch_bound = timing_of([0.005, 0.005, 0.005], wall=0.04, clock="cuda_event")
    assert timing.timing_problem(launch_bound, floor=0.0) is None  # within the launch allowance
    # device time without the host's: a call the host takes 0.1 ms to queue runs 0.1 ms apart
    host_bound = timing_of([0.02, 0.02, 0.02], wall=0.11, clock="cuda_event")
    assert "wall clock" in timing.timing_problem(host_bound, floor=0.0)
    host_bound = host_bound.model_copy(update={"wall_host_ms_per_call": 0.1})
    assert timing.timing_problem(host_bound, floor=0.0) is None
    # on the host clock the queueing time is the call itself: forged samples stay caught
    forged = timing_of([0.001] * 3, wall=1.0).model_copy(update={"wall_host_ms_per_call": 1.0})
    assert "wall clock" in timing.timing_problem(forged, floor=0.0)
    # on the host clock an honest threaded call back to back may take twice its samples
    threaded = timing_of([1.4, 1.5, 1.6], wall=3.2)
    assert timing.timing_problem(threaded, floor=0.0) is None
    assert "wall clock" in timing.timing_problem(timing_of([1.0] * 3, wall=3.1), floor=0.0)


def test_floor_counts_bytes_and_flops():
    assert timing.evaluate("2*M*N*K", {"M": 10, "N": 20, "K": 30}) == 12000
    assert timing.evaluate(None, {}) == 0 and timing.evaluate("Q*2", {}) == 0
    assert timing.floor_ms(4e9, 0, peak_bandwidth=4e12, peak_flops=1e15) == pytest.approx(1.0)
    assert timing.floor_ms(0, 2e12, peak_bandwidth=4e12, peak_flops=1e15) == pytest.approx(2.0)


def test_bytes_needed_are_declared_or_the_outputs_beyond_the_cache():
    llc = 64 << 20
    assert timing.bytes_needed(0, out_bytes=256 << 20, llc_bytes=llc) == 192 << 20
    assert timing.bytes_needed(0, out_bytes=16 << 20, llc_bytes=llc) == 0  # may stay in cache
    assert timing.bytes_needed(1e9, out_bytes=16 << 20, llc_bytes=llc) == 1e9


def test_wall_clock_per_call_from_markers():
    ms = 1_000_000
    markers = [
        ("start 0", 0),
        ("begin 0 0", 0),
        ("end 0 0", 10 * ms),
        ("begin 0 1", 20 * ms),
        ("end 0 1", 28 * ms),
    ]
    assert timing.wall_ms_per_call(markers, 0, blocks=2, calls=4) == 2.0
    assert "missing" in timing.wall_ms_per_call(markers, 0, blocks=3, calls=4)
    assert "twice" in timing.wall_ms_per_call(
        markers + [("end 0 1", 30 * ms)], 0, blocks=2, calls=4
    )
    assert "missing" in timing.wall_ms_per_call(markers, 1, blocks=2, calls=4)
    assert timing.host_ms_per_call(markers, 0, calls=4) is None
    queued = markers + [("queued 0 0", 6 * ms), ("queued 0 1", 24 * ms)]
    assert timing.host_ms_per_call(queued, 0, calls=4) == 1.0  # the faster block


def test_wall_blocks_last_about_the_target():
    assert timing.wall_calls([0.1] * 5, [0.1] * 5) == 100
    assert timing.wall_calls([1e-6] * 5, [2.0] * 5) == 5  # sized by the slower clock
    assert timing.wall_calls([50.0], [50.0]) == timing.WALL_CALLS[0]


def test_the_sm_clock_is_none_without_an_nvidia_device():
    from kernel_bakeoff.scripts.smclock import SmClock, _device_keys

    if not torch.cuda.is_available():
        assert SmClock()() is None
    props = type("P", (), {"uuid": "1234-ab", "pci_bus_id": 0x1B, "pci_device_id": 0})()
    assert _device_keys(props) == ["GPU-1234-ab", "00000000:1b:00.0", "0000:1b:00.0"]


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool]
)
def test_tensor_files_round_trip(dtype, tmp_path):
    t = (torch.randn(6, 5) * 4).to(dtype).t()  # non-contiguous
    saved = tensorfile.save(tmp_path, "t.bin", t)
    back = tensorfile.load(tmp_path, saved)
    assert back.dtype == dtype and back.shape == t.shape and compare.same_bits(back, t)
    empty = tensorfile.save(tmp_path, "e.bin", torch.empty(0, 3, dtype=dtype))
    assert tensorfile.load(tmp_path, empty).shape == (0, 3)


def test_tensor_files_refuse_what_does_not_fit(tmp_path):
    saved = tensorfile.save(tmp_path, "t.bin", torch.ones(4))
    assert isinstance(tensorfile.load(tmp_path, saved.model_copy(update={"shape": [5]})), str)
    assert isinstance(tensorfile.load(tmp_path, saved.model_copy(update={"file": "../t.bin"})), str)
    assert isinstance(tensorfile.load(tmp_path, saved.model_copy(update={"dtype": "Tensor"})), str)
    assert isinstance(tensorfile.load(tmp_path, saved.model_copy(update={"file": "gone.bin"})), str)


def test_the_judge_starts_the_candidate_before_it_imports_torch():
    """The judge imports torch while the candidate's process starts: nothing it needs before
    spawning may pull torch in (nor may check() in the orchestrator)."""
    code = "import sys, kernel_bakeoff.scripts.judge, kernel_bakeoff.scripts.check; print('torch' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert done.stdout.strip() == "False", done.stderr
