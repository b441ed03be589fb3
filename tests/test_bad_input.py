"""Bad input through the real command line: one line naming what and where, exit 2, no
traceback, and no task directory (nor a staging directory) left behind."""

import json
import shutil
from pathlib import Path

import pytest

from .conftest import EXAMPLES, run_cli

TS = EXAMPLES / "flashinfer_traceset"


def _native(tmp: Path, edit=lambda text: text, files: dict | None = None) -> Path:
    """A copy of examples/rmsnorm_torch with op.toml edited and files added or replaced."""
    op = shutil.copytree(EXAMPLES / "rmsnorm_torch", tmp / "op")
    (op / "op.toml").write_text(edit((op / "op.toml").read_text()))
    for name, text in (files or {}).items():
        (op / name).write_text(text)
    return op


def _trace_set(tmp: Path, edit_definition=None, edit_workload=None) -> Path:
    """A copy of the example trace set with rmsnorm_h256's definition or first workload edited."""
    ts = shutil.copytree(TS, tmp / "ts")
    if edit_definition:
        path = ts / "definitions" / "rmsnorm" / "rmsnorm_h256.json"
        path.write_text(json.dumps(edit_definition(json.loads(path.read_text()))))
    if edit_workload:
        path = ts / "workloads" / "rmsnorm" / "rmsnorm_h256.jsonl"
        first, *rest = path.read_text().splitlines()
        record = json.loads(first)
        edit_workload(record["workload"])
        path.write_text("\n".join([json.dumps(record), *rest]) + "\n")
    return ts


def _solution_entry(tmp: Path, entry_point: str) -> Path:
    """A copy of the example trace set whose baseline rmsnorm solution names `entry_point`."""
    ts = shutil.copytree(TS, tmp / "ts")
    (path,) = (ts / "solutions" / "baseline" / "rmsnorm").rglob("*.json")
    solution = json.loads(path.read_text())
    solution["spec"]["entry_point"] = entry_point
    path.write_text(json.dumps(solution))
    return ts


def _without(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


RAISING_REFERENCE = "def rmsnorm(x, weight):\n    return 1 / 0\n"

UNIMPORTABLE_REFERENCE = (
    "raise ImportError('needs a library this box lacks')\n\n\n"
    "def rmsnorm(x, weight):\n    return x\n"
)

CASES = {
    "missing path": (lambda t: [str(t / "nowhere")], ["nowhere", "no such file or directory"]),
    "op.toml missing a field": (
        lambda t: [str(_native(t, lambda s: s.replace('entry = "kernel.py:rmsnorm"\n', "")))],
        ["op.toml", "field entry", "required"],
    ),
    "op.toml unknown dtype": (
        lambda t: [str(_native(t, lambda s: s.replace('"float32"', '"float33"', 1)))],
        ["op.toml", "inputs.0.dtype", "unknown dtype 'float33'"],
    ),
    "op.toml unknown kind": (
        lambda t: [str(_native(t, lambda s: s.replace('kind = "norm"', 'kind = "normal"')))],
        ["op.toml", "field kind"],
    ),
    "op.toml extra field": (
        lambda t: [str(_native(t, lambda s: s.replace("flops =", 'speed = "fast"\nflops =')))],
        ["op.toml", "field speed", "not permitted"],
    ),
    "entry file missing": (
        lambda t: [str(_native(t, lambda s: s.replace("kernel.py:", "kernal.py:")))],
        ["op.toml", "kernal.py not found"],
    ),
    "entry symbol missing": (
        lambda t: [str(_native(t, lambda s: s.replace(":rmsnorm", ":rms_norm")))],
        ["op.toml", "entry", "kernel.py defines no 'rms_norm'"],
    ),
    "reference raises": (
        lambda t: [
            str(
                _native(
                    t,
                    lambda s: s.replace("flops =", 'reference = "ref.py:rmsnorm"\nflops ='),
                    {"ref.py": RAISING_REFERENCE},
                )
            )
        ],
        ["tokens_256", "ZeroDivisionError"],
    ),
    "reference fails to import": (
        lambda t: [
            str(
                _native(
                    t,
                    lambda s: s.replace("flops =", 'reference = "ref.py:rmsnorm"\nflops ='),
                    {"ref.py": UNIMPORTABLE_REFERENCE},
                )
            )
        ],
        ["ref.py", "needs a library this box lacks"],
    ),
    "workload lacks a dimension": (
        lambda t: [
            str(
                _native(
                    t, lambda s: s.replace("dims = { T = 256, H = 1024 }", "dims = { T = 256 }")
                )
            )
        ],
        ["op.toml", "tokens_256", "needs dimension 'H'"],
    ),  # fmt: skip
    "workload shapes make the kernel raise": (
        lambda t: [
            str(
                _native(
                    t,
                    lambda s: (
                        s.replace('shape = ["H"]', 'shape = ["W"]')
                        .replace("H = 512 }", "H = 512, W = 500 }")
                        .replace("H = 1024 }", "H = 1024, W = 1024 }")
                    ),
                )
            )
        ],
        ["tokens_1k", "RuntimeError"],
    ),
    "trace set without definitions": (
        lambda t: [str(shutil.rmtree(_trace_set(t) / "definitions") or t / "ts")],
        ["ts", "no definitions/ directory"],
    ),
    "unknown operator": (
        lambda t: [str(TS), "--op", "layernorm_h256"],
        ["--op layernorm_h256", "no such operator"],
    ),
    "trace set with several operators and no --op": (
        lambda t: [str(TS)],
        ["pick one with --op", "rmsnorm/rmsnorm_h256"],
    ),
    "--op on a native op": (
        lambda t: [str(EXAMPLES / "rmsnorm_torch"), "--op", "rmsnorm"],
        ["--op applies only to a flashinfer-bench trace set"],
    ),
    "definition unknown dtype": (
        lambda t: [
            str(
                _trace_set(
                    t,
                    lambda d: {
                        **d,
                        "outputs": {"output": {"shape": ["batch_size"], "dtype": "float12"}},
                    },
                )
            ),
            "--op",
            "rmsnorm_h256",
        ],
        ["rmsnorm_h256.json", "outputs.output.dtype", "unknown dtype 'float12'"],
    ),  # fmt: skip
    "definition missing reference": (
        lambda t: [str(_trace_set(t, lambda d: _without(d, "reference"))), "--op", "rmsnorm_h256"],
        ["rmsnorm_h256.json", "field reference", "required"],
    ),
    "definition input on an undeclared axis": (
        lambda t: [
            str(_trace_set(t, lambda d: {**d, "axes": _without(d["axes"], "hidden_size")})),
            "--op",
            "rmsnorm_h256",
        ],
        ["rmsnorm_h256.json", "uses axis 'hidden_size'"],
    ),  # fmt: skip
    "workload lacks a var axis": (
        lambda t: [
            str(_trace_set(t, edit_workload=lambda w: w["axes"].clear())),
            "--op",
            "rmsnorm_h256",
        ],
        ["rmsnorm_h256.jsonl:1", "needs dimension 'batch_size'"],
    ),  # fmt: skip
    "workload lacks an input source": (
        lambda t: [
            str(_trace_set(t, edit_workload=lambda w: w["inputs"].pop("eps"))),
            "--op",
            "rmsnorm_h256",
        ],
        ["rmsnorm_h256.jsonl:1", "input 'eps' has no source"],
    ),  # fmt: skip
    "solution entry point names no function": (
        lambda t: [str(_solution_entry(t, "main.py::launch")), "--op", "rmsnorm_h256"],
        ["rmsnorm_h256_torch.json", "main.py defines no 'launch'"],
    ),
    "solution entry file not among its sources": (
        lambda t: [str(_solution_entry(t, "kernel.py::run")), "--op", "rmsnorm_h256"],
        ["rmsnorm_h256_torch.json", "entry file 'kernel.py' is not among the sources"],
    ),
    "unknown --solution": (
        lambda t: [str(TS), "--op", "rmsnorm_h256", "--solution", "nobody"],
        ["--solution nobody", "authors: ['baseline', 'triton-lab']"],
    ),
    "KernelBench without get_inputs": (
        lambda t: [
            str(
                _write(
                    t / "problem.py",
                    (EXAMPLES / "kernelbench" / "matmul_gelu.py")
                    .read_text()
                    .replace("def get_inputs", "def make_inputs"),
                )
            )
        ],
        ["problem.py", "lacks ['get_inputs']"],
    ),
}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(tmp_path, case):
    make_args, fragments = CASES[case]
    args = make_args(tmp_path)
    out_root = tmp_path / "tasks"
    done = run_cli("freeze", *args, "--out", str(out_root / "task"), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("bakeoff freeze: error: ")
    assert "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not (out_root / "task").exists()
    assert not out_root.exists() or not any(out_root.iterdir()), list(out_root.iterdir())
    assert not (tmp_path / "runs").exists()


def test_debug_shows_the_traceback(tmp_path):
    done = run_cli("--debug", "freeze", str(tmp_path / "nowhere"))
    assert done.returncode == 2
    assert "Traceback" in done.stderr and "no such file or directory" in done.stderr


def test_list_of_a_directory_that_is_not_a_trace_set(tmp_path):
    done = run_cli("list", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"bakeoff list: error: {tmp_path}: not a flashinfer-bench trace set: no definitions/ "
        "directory (expected definitions/<op_type>/<op>.json beside workloads/)"
    )
