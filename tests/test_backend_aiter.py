"""aiter's tuning files, GEMM shape recording and routing, tested on the CPU with a fake aiter."""

import sys
import types
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from kernel_bakeoff.scripts.freeze import freeze
from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from kernel_bakeoff.tasks.backends import aiter_csv, gemm_shapes, wrappers
from kernel_bakeoff.tasks.backends.aiter_gemm import ROUTE, AiterGemm
from kernel_bakeoff.tasks.backends.aiter_route import AiterGemm as AiterMode
from kernel_bakeoff.tasks.backends.base import BuildContext, write_candidate
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult

# aiter's own header lines (aiter/configs/bf16_untuned_gemm.csv and bf16_tuned_gemm.csv)
AITER_UNTUNED_HEADER = "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle"
AITER_TUNED_HEADER = (
    "gfx,cu_num,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,"
    "kernelName,err_ratio,tflops,bw"
)

OP = """
import torch
import torch.nn.functional as F

def mlp(x, w1, b1, w2):
    h = F.gelu(F.linear(x, w1, b1))
    return h @ w2.t()
"""
TOML = """
name = "mlp"
kind = "gemm"
language = "torch"
entry = "kernel.py:mlp"
[[inputs]]
name = "x"
shape = ["T", 64]
dtype = "bfloat16"
[[inputs]]
name = "w1"
shape = [128, 64]
dtype = "bfloat16"
[[inputs]]
name = "b1"
shape = [128]
dtype = "bfloat16"
[[inputs]]
name = "w2"
shape = [32, 128]
dtype = "bfloat16"
[[workloads]]
name = "t16"
dims = { T = 16 }
[[workloads]]
name = "t256"
dims = { T = 256 }
"""


@pytest.fixture(scope="module")
def mlp_task(tmp_path_factory):
    src = tmp_path_factory.mktemp("mlp")
    src.chmod(0o755)  # a user's kernel directory: the box's uid reads it (box.unreadable)
    (src / "kernel.py").write_text(OP)
    (src / "op.toml").write_text(TOML)
    return freeze(src, tmp_path_factory.mktemp("tasks") / "mlp")


def test_columns_are_aiters():
    assert ",".join(aiter_csv.UNTUNED_COLUMNS) == AITER_UNTUNED_HEADER
    assert ",".join((*aiter_csv.TUNED_KEY, *aiter_csv.TUNED_RESULT)) == AITER_TUNED_HEADER


def test_shapes_recorded_on_meta_from_the_frozen_workloads(mlp_task, tmp_path):
    ctx = BuildContext.load(mlp_task, tmp_path)
    rows = gemm_shapes.record(ctx, "kernel.py:mlp")
    assert [(r["M"], r["N"], r["K"], r["bias"]) for r in rows] == [
        (16, 128, 64, True),
        (16, 32, 128, False),
        (256, 128, 64, True),
        (256, 32, 128, False),
    ]
    assert {r["dtype"] for r in rows} == {"torch.bfloat16"}


def test_untuned_csv_round_trip(mlp_task, tmp_path):
    ctx = BuildContext.load(mlp_task, tmp_path)
    rows = gemm_shapes.record(ctx, "kernel.py:mlp")
    path = aiter_csv.write_untuned(tmp_path / "u.csv", rows + rows[:1])
    lines = path.read_text().splitlines()
    assert lines[0] == AITER_UNTUNED_HEADER and len(lines) == 5  # duplicates dropped
    assert lines[1] == "16,128,64,True,torch.bfloat16,torch.bfloat16,False,False"
    assert aiter_csv.read_untuned(path) == rows
    with pytest.raises(aiter_csv.CsvError, match="lacks"):
        aiter_csv.write_untuned(tmp_path / "bad.csv", [{"M": 1}])


def test_tuned_csv_reader_and_coverage(tmp_path):
    tuned = tmp_path / "t.csv"
    tuned.write_text(
        AITER_TUNED_HEADER
        + "\ngfx942,304,16,128,64,True,torch.bfloat16,torch.bfloat16,False,False,hipblaslt,667788,0,10.6,,0.0,3.1,200.5"
        + "\ngfx950,256,256,32,128,False,torch.bfloat16,torch.bfloat16,False,False,asm,5,13,7.9,_ZN5aiter39bf16gemm,0.0,21.19,417.92\n"
    )
    rows = aiter_csv.read_tuned(tuned)
    assert rows[0]["solidx"] == 667788 and rows[0]["bias"] is True and rows[1]["us"] == 7.9
    shapes = [
        {
            "M": 16,
            "N": 128,
            "K": 64,
            "bias": True,
            "dtype": "torch.bfloat16",
            "outdtype": "torch.bfloat16",
            "scaleAB": False,
            "bpreshuffle": False,
        },
        {
            "M": 256,
            "N": 32,
            "K": 128,
            "bias": False,
            "dtype": "torch.bfloat16",
            "outdtype": "torch.bfloat16",
            "scaleAB": False,
            "bpreshuffle": False,
        },
    ]
    assert aiter_csv.uncovered(rows, shapes, "gfx942", 304) == shapes[1:]
    assert aiter_csv.uncovered(rows, shapes, "gfx942", 80) == shapes  # another CU count misses
    (tmp_path / "short.csv").write_text("M,N,K\n1,2,3\n")
    with pytest.raises(aiter_csv.CsvError, match="missing"):
        aiter_csv.read_tuned(tmp_path / "short.csv")


def test_tuner_command_and_engagement_lines(tmp_path):
    cmd, cwd = aiter_csv.tuner_command(
        Path("/opt/aiter"), tmp_path / "u.csv", tmp_path / "t.csv", "py"
    )
    assert cmd == [
        "py",
        "/opt/aiter/gradlib/gradlib/gemm_tuner.py",
        "--input_file",
        str(tmp_path / "u.csv"),
        "--tuned_file",
        str(tmp_path / "t.csv"),
        "--mp",
        "1",
    ]
    assert cwd == Path("/opt/aiter/gradlib/gradlib")
    log = (
        "[aiter] shape is M:16, N:128, K:64 dtype='torch.bfloat16' found padded_M: 16, N:128, K:64 "
        "is tuned on cu_num = 304 in /w/t.csv, libtype is hipblaslt, kernel name is \n"
        "[aiter] shape is M:99, N:128, K:64 not found tuned config in /w/t.csv, will use default config!\n"
    )
    assert aiter_csv.engagement(log) == (1, 1)

    def result(tail):
        timing = Timing(
            clock="cuda_event",
            sample_count=1,
            median_ms=1,
            min_ms=1,
            max_ms=1,
            spread_ms=0,
            samples_ms=[1],
        )
        verdict = Verdict(
            candidate="c",
            oracle_sha256="o",
            device="cuda",
            status=Status.PASSED,
            workloads=[WorkloadVerdict(workload="w", status=Status.PASSED, timing=timing)],
            output_tail=tail,
        )
        ref = CandidateRef(name="a", language="aiter", mode="tuned-env", path="c", origin="aiter")
        return CandidateResult(candidate=ref, verdict=verdict)

    assert AiterGemm.engaged(result(log)) and not AiterGemm.engaged(result(log.splitlines()[1]))


@pytest.fixture
def fake_aiter(monkeypatch):
    calls = []

    def mm(x, w, bias=None):
        calls.append((tuple(x.shape), tuple(w.shape), bias is not None))
        return F.linear(x, w, bias)

    pkg = types.ModuleType("aiter")
    tuned = types.ModuleType("aiter.tuned_gemm")
    tuned.tgemm = types.SimpleNamespace(mm=mm)
    monkeypatch.setitem(sys.modules, "aiter", pkg)
    monkeypatch.setitem(sys.modules, "aiter.tuned_gemm", tuned)
    return calls


def test_routing_mode_sends_linear_and_weight_matmuls_to_aiter(fake_aiter):
    x = torch.randn(8, 64, dtype=torch.bfloat16)
    w = torch.randn(32, 64, dtype=torch.bfloat16)
    b = torch.randn(64, 32, dtype=torch.bfloat16)  # row-major [K, N]: not aiter's layout
    with AiterMode():
        y1 = F.linear(x, w)
        y2 = x @ w.t()
        y3 = x @ b
        y4 = x.float() @ w.t().float()
    assert fake_aiter == [((8, 64), (32, 64), False), ((8, 64), (32, 64), False)]
    torch.testing.assert_close(y1, y2)
    assert y3.shape == (8, 32) and y4.dtype == torch.float32


def test_aiter_candidate_wrapper_runs_the_op_through_the_mode(mlp_task, tmp_path, fake_aiter):
    from kernel_bakeoff.scripts.program import import_file

    ctx = BuildContext.load(mlp_task, tmp_path)
    text = wrappers.routed(ctx, "kernel.py:mlp", ROUTE.name, "AiterGemm", "aiter")
    path = write_candidate(ctx, "aiter", text)
    (path / ROUTE.name).write_text(ROUTE.read_text())
    mlp = import_file(path / "kernel.py", "test").mlp
    frozen = import_file(ctx.baseline_src / "kernel.py", "test").mlp
    args = [torch.randn(s, dtype=torch.bfloat16) for s in ((4, 64), (128, 64), (128,), (32, 128))]
    torch.testing.assert_close(mlp(*args), frozen(*args))
    assert len(fake_aiter) == 2


def test_aiter_refuses_ops_that_are_not_gemms(frozen_rmsnorm):
    from kernel_bakeoff.scripts.freeze import load_task

    spec, _, _ = load_task(frozen_rmsnorm)
    assert "GEMM ops" in AiterGemm().cannot_build(spec)
