import json
import logging
import re
import shutil

import pytest
import torch

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.scripts.compare import rel_error
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.formats import detect_format, load_spec, module_for
from kernel_bakeoff.scripts.formats.flashinfer import list_operators
from kernel_bakeoff.scripts.freeze import freeze, load_task
from kernel_bakeoff.scripts.spec import OpKind

from .conftest import EXAMPLES, cli_in_process, run_cli

TS = EXAMPLES / "flashinfer_traceset"
RMSNORM_DEF = TS / "definitions" / "rmsnorm" / "rmsnorm_h256.json"
SILU_DEF = TS / "definitions" / "activation" / "silu_and_mul_d256.json"


@pytest.fixture
def trace_set(tmp_path):
    """A private copy of the example trace set that a test may change."""
    return shutil.copytree(TS, tmp_path / "ts")


def test_detects_the_root_and_a_definition_file_but_not_other_json(tmp_path):
    assert detect_format(TS) == "flashinfer"
    assert detect_format(RMSNORM_DEF) == "flashinfer"
    stray = tmp_path / "notes.json"
    stray.write_text("{}")
    with pytest.raises(BadInput, match="not a kernel"):
        detect_format(stray)


def test_list_operators_counts_workloads_and_names_authors(trace_set):
    assert list_operators(TS) == [
        {"op_type": "activation", "name": "silu_and_mul_d256", "workloads": 3,
         "authors": ["baseline", "triton-lab"]},
        {"op_type": "rmsnorm", "name": "rmsnorm_h256", "workloads": 4,
         "authors": ["baseline", "triton-lab"]},
    ]  # fmt: skip
    # A definition without workloads is not offered.
    lonely = trace_set / "definitions" / "rmsnorm" / "rmsnorm_h512.json"
    lonely.write_text(RMSNORM_DEF.read_text().replace("256", "512"))
    assert [op["name"] for op in list_operators(trace_set)] == [
        "silu_and_mul_d256",
        "rmsnorm_h256",
    ]


def test_list_command_text_and_json(capfd):
    text = cli_in_process(capfd, "list", str(TS))
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "activation/silu_and_mul_d256  (3 workloads; solutions: baseline, triton-lab)",
        "rmsnorm/rmsnorm_h256  (4 workloads; solutions: baseline, triton-lab)",
    ]
    as_json = cli_in_process(capfd, "list", str(TS), "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == list_operators(TS)


def test_the_three_ways_to_name_an_op_load_the_same_spec():
    by_file, _ = load_spec(RMSNORM_DEF)
    by_name, _ = load_spec(TS, op="rmsnorm_h256")
    by_type_and_name, _ = load_spec(TS, op="rmsnorm/rmsnorm_h256")
    assert by_file == by_name == by_type_and_name


def test_spec_follows_the_definition_and_workloads():
    spec, src = load_spec(TS, op="rmsnorm_h256")
    assert (spec.name, spec.format, spec.kind, spec.language) == (
        "rmsnorm_h256",
        "flashinfer",
        OpKind.norm,
        "torch",
    )
    assert spec.entry == "solution/main.py:run" and spec.reference == "reference.py:run"
    assert [(i.name, i.shape, i.dtype) for i in spec.inputs] == [
        ("hidden_states", ["batch_size", 256], "bfloat16"),
        ("weight", [256], "bfloat16"),
        ("eps", [], "float32"),
    ]
    assert spec.extra["scalar_inputs"] == ["eps"]
    assert spec.extra["solution"]["author"] == "baseline"
    lines = (TS / "workloads" / "rmsnorm" / "rmsnorm_h256.jsonl").read_text().splitlines()
    uuids = [json.loads(line)["workload"]["uuid"] for line in lines]
    assert [w.name for w in spec.workloads] == uuids
    assert [w.dims for w in spec.workloads] == [{"batch_size": b} for b in (1, 7, 64, 333)]
    assert sorted(p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()) == [
        "definition.json",
        "reference.py",
        "solution.json",
        "solution/main.py",
        "workloads.jsonl",
    ]


def test_inputs_are_deterministic_per_seed_and_scalars_pass_through():
    spec, src = load_spec(TS, op="rmsnorm_h256")
    fmt = module_for(spec.format)
    wl = spec.workloads[-1]
    a, b, c = (fmt.make_inputs(spec, src, wl, s, "cpu") for s in (5, 5, 6))
    assert a[0].shape == (333, 256) and a[0].dtype == torch.bfloat16
    assert a[1].shape == (256,)
    assert a[2] == 1e-5 and isinstance(a[2], float)
    assert all(torch.equal(x, y) for x, y in zip(a[:2], b[:2]))
    assert not torch.equal(a[0], c[0])


@pytest.mark.parametrize("op", ["rmsnorm_h256", "silu_and_mul_d256"])
def test_baseline_agrees_with_the_reference_on_every_workload(op):
    spec, src = load_spec(TS, op=op)
    fmt = module_for(spec.format)
    base = fmt.load_callable(spec, src, spec.entry, "cpu")
    ref = fmt.load_callable(spec, src, spec.reference, "cpu")
    for wl in spec.workloads:
        inputs = fmt.make_inputs(spec, src, wl, 1, "cpu")
        out, expected = base(*inputs), ref(*inputs)
        assert out.shape == expected.shape and out.dtype == expected.dtype
        assert rel_error(out, expected) <= spec.tolerance_for(str(out.dtype)[6:])


@pytest.mark.parametrize("op", ["rmsnorm_h256", "silu_and_mul_d256"])
def test_another_authors_solution_json_loads_as_a_candidate(op):
    # rmsnorm's Triton solution declares destination-passing style; silu_and_mul's does not
    # say, and its run(x, out) signature shows it.
    spec, src = load_spec(TS, op=op)
    fmt = module_for(spec.format)
    (other,) = (TS / "solutions" / "triton-lab").rglob(f"{op}/*.json")
    cand = fmt.load_callable(spec, src, spec.entry, "cpu", candidate=other)
    ref = fmt.load_callable(spec, src, spec.reference, "cpu")
    for wl in spec.workloads[:2]:  # the small ones: Triton is interpreted on the CPU
        inputs = fmt.make_inputs(spec, src, wl, 2, "cpu")
        out, expected = cand(*inputs), ref(*inputs)
        assert out.shape == expected.shape and out.dtype == expected.dtype
        assert rel_error(out, expected) <= spec.tolerance_for(str(out.dtype)[6:])


def test_a_directory_of_sources_loads_as_a_candidate(tmp_path):
    spec, src = load_spec(TS, op="silu_and_mul_d256")
    fmt = module_for(spec.format)
    (tmp_path / "main.py").write_text(
        "import torch\n\ndef run(x):\n    a, b = x.chunk(2, dim=-1)\n"
        "    return a * torch.sigmoid(a) * b\n"
    )
    cand = fmt.load_callable(spec, src, spec.entry, "cpu", candidate=tmp_path)
    inputs = fmt.make_inputs(spec, src, spec.workloads[1], 0, "cpu")
    ref = fmt.load_callable(spec, src, spec.reference, "cpu")
    torch.testing.assert_close(cand(*inputs), ref(*inputs))


def test_baseline_author_is_preferred(caplog):
    with caplog.at_level(logging.WARNING):
        spec, _ = load_spec(TS, op="silu_and_mul_d256")
    assert spec.extra["solution"]["author"] == "baseline"
    assert not caplog.records


def test_without_a_baseline_author_the_first_is_taken_with_a_warning(trace_set, caplog):
    shutil.rmtree(trace_set / "solutions" / "baseline" / "rmsnorm")
    with caplog.at_level(logging.WARNING):
        spec, _ = load_spec(trace_set, op="rmsnorm_h256")
    assert spec.extra["solution"]["author"] == "triton-lab"
    assert spec.language == "triton"
    (record,) = caplog.records
    assert "no 'baseline' author" in record.getMessage()
    assert "triton-lab" in record.getMessage() and "--solution" in record.getMessage()


def test_without_solutions_the_reference_is_the_baseline(trace_set, caplog):
    shutil.rmtree(trace_set / "solutions")
    with caplog.at_level(logging.WARNING):
        spec, src = load_spec(trace_set, op="silu_and_mul_d256")
    assert spec.entry == "reference.py:run" and spec.reference is None
    assert spec.extra["solution"] is None
    assert "no solutions" in caplog.records[0].getMessage()
    assert not (src / "solution").exists()


def test_solution_named_explicitly_by_author_name_or_path():
    by_author, _ = load_spec(TS, op="rmsnorm_h256", solution="triton-lab")
    by_name, _ = load_spec(TS, op="rmsnorm_h256", solution="rmsnorm_h256_triton")
    path = TS / "solutions" / "triton-lab" / "rmsnorm" / "rmsnorm_h256" / "rmsnorm_h256_triton.json"
    by_path, _ = load_spec(TS, op="rmsnorm_h256", solution=str(path))
    assert by_author == by_name == by_path
    assert by_author.extra["solution"]["name"] == "rmsnorm_h256_triton"
    assert by_author.extra["solution"]["destination_passing_style"] is True
    with pytest.raises(BadInput, match=r"authors: \['baseline', 'triton-lab'\]"):
        load_spec(TS, op="rmsnorm_h256", solution="nobody")
    other_op = TS / "solutions" / "baseline" / "activation" / "silu_and_mul_d256"
    with pytest.raises(BadInput, match="solves 'silu_and_mul_d256'"):
        load_spec(TS, op="rmsnorm_h256", solution=str(next(other_op.glob("*.json"))))


def test_frozen_task_needs_nothing_outside_itself(trace_set, tmp_path):
    task = freeze(trace_set, tmp_path / "task", op="silu_and_mul_d256")
    again = freeze(TS, tmp_path / "again", op="silu_and_mul_d256")
    first = json.loads((task / manifest.MANIFEST).read_text())["oracle_sha256"]
    assert first == json.loads((again / manifest.MANIFEST).read_text())["oracle_sha256"]
    shutil.rmtree(trace_set)
    spec, src, baseline = load_task(task)
    assert {w.status.value for w in baseline.workloads.values()} == {"PASSED"}
    fmt = module_for(spec.format)
    base = fmt.load_callable(spec, src, spec.entry, "cpu")
    ref = fmt.load_callable(spec, src, spec.reference, "cpu")
    inputs = fmt.make_inputs(spec, src, spec.workloads[0], 9, "cpu")
    assert rel_error(base(*inputs), ref(*inputs)) < 1e-6


def test_freeze_command_by_definition_file(tmp_path, capfd):
    out = tmp_path / "task"
    done = cli_in_process(capfd, "freeze", str(RMSNORM_DEF), "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["task_dir"] == str(out) and len(result["workloads"]) == 4
    spec = json.loads((out / "spec.json").read_text())
    assert spec["extra"]["solution"]["author"] == "baseline"


def test_freeze_command_warns_when_it_falls_back_to_another_author(trace_set, tmp_path):
    """In a process of its own: the warning is a log record, and the terminal is where a user
    reads it (in the test's process, pytest's log capture takes it)."""
    shutil.rmtree(trace_set / "solutions" / "baseline")
    workloads = trace_set / "workloads" / "rmsnorm" / "rmsnorm_h256.jsonl"
    workloads.write_text("".join(workloads.read_text().splitlines(True)[:2]))  # keep it quick
    out = tmp_path / "task"
    done = run_cli("freeze", str(trace_set), "--op", "rmsnorm_h256", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "no 'baseline' author" in done.stderr and "triton-lab" in done.stderr
    spec = json.loads((out / "spec.json").read_text())
    assert spec["language"] == "triton" and spec["extra"]["solution"]["author"] == "triton-lab"


def _load_weight_from_file(trace_set, key="weight", shape=(256,)):
    """Point rmsnorm's first workload's weight at a safetensors file inside the trace set."""
    from kernel_bakeoff.scripts.formats.blobs import write_tensors

    weight = torch.linspace(0.5, 1.5, shape[0]).to(torch.bfloat16).reshape(shape)
    (trace_set / "tensors").mkdir()
    write_tensors(trace_set / "tensors" / "w.safetensors", {key: weight})
    path = trace_set / "workloads" / "rmsnorm" / "rmsnorm_h256.jsonl"
    first, *rest = path.read_text().splitlines()
    record = json.loads(first)
    record["workload"]["inputs"]["weight"] = {
        "type": "safetensors",
        "path": "tensors/w.safetensors",
        "tensor_key": "weight",
    }
    path.write_text("\n".join([json.dumps(record), *rest]) + "\n")
    return weight


def test_safetensors_inputs_are_loaded_and_frozen_with_the_task(trace_set, tmp_path):
    weight = _load_weight_from_file(trace_set)
    task = freeze(trace_set, tmp_path / "task", op="rmsnorm_h256")
    shutil.rmtree(trace_set)
    spec, src, _ = load_task(task)
    source = spec.workloads[0].extra["inputs"]["weight"]
    assert source["path"] == "blobs/tensors/w.safetensors"
    assert (src / "blobs" / "tensors" / "w.safetensors").is_file()
    fmt = module_for(spec.format)
    first, second = (fmt.make_inputs(spec, src, spec.workloads[0], s, "cpu") for s in (1, 2))
    assert torch.equal(first[1], weight) and torch.equal(second[1], weight)
    assert not torch.equal(first[0], second[0])  # the random input still follows the seed


@pytest.mark.parametrize(
    "key, shape, message",
    [("bias", (256,), "holds no tensor 'weight'"), ("weight", (128,), "is [128] bfloat16")],
)
def test_safetensors_input_that_does_not_fit_is_refused(trace_set, key, shape, message):
    _load_weight_from_file(trace_set, key=key, shape=shape)
    with pytest.raises(BadInput, match=re.escape(message)):
        load_spec(trace_set, op="rmsnorm_h256")


@pytest.mark.parametrize(
    "tensor",
    [
        torch.randn(3, 5).to(torch.bfloat16),
        torch.arange(12, dtype=torch.int32).reshape(2, 6),
        torch.tensor([True, False, True]),
        torch.empty(0, 4, dtype=torch.float16),
    ],
)
def test_tensor_files_round_trip(tmp_path, tensor):
    from kernel_bakeoff.scripts.formats.blobs import describe, read_tensor, write_tensors

    path = tmp_path / "t.safetensors"
    write_tensors(path, {"a": torch.ones(2), "t": tensor})
    assert describe(path, "t", "test") == (list(tensor.shape), tensor.dtype)
    assert torch.equal(read_tensor(path, "t", "test"), tensor)


def test_destination_passing_needs_output_sizes_the_inputs_give(trace_set):
    path = trace_set / "definitions" / "rmsnorm" / "rmsnorm_h256.json"
    definition = json.loads(path.read_text())
    definition["axes"]["rows_out"] = {"type": "var"}
    definition["outputs"]["output"]["shape"] = ["rows_out", "hidden_size"]
    path.write_text(json.dumps(definition))
    load_spec(trace_set, op="rmsnorm_h256")  # the value-returning baseline allocates its own
    with pytest.raises(BadInput, match="needs var axis 'rows_out', which no input's shape gives"):
        load_spec(trace_set, op="rmsnorm_h256", solution="triton-lab")
