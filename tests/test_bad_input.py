"""Bad input through the real command line: one line naming what and where, exit 2, no
traceback, and no task directory (nor a staging directory) left behind."""

import json
import shutil
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.errors import BadInput

from .conftest import EXAMPLES, cli_in_process, run_cli

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
    "a symlink to a host file in the kernel directory": (
        lambda t: [str(_linked(t, "passwd.py", "/etc/passwd"))],
        ["op/passwd.py", "is a symbolic link (to /etc/passwd)"],
    ),
    "a symlink loop in the kernel directory": (
        lambda t: [str(_linked(t, "loop", "loop"))],
        ["op/loop", "is a symbolic link (to loop)"],
    ),
    "entry outside the directory": (
        lambda t: [str(_native(t, lambda s: s.replace('"kernel.py:', f'"{_outside(t)}:')))],
        ["op.toml", "outside the op directory"],
    ),
    "entry reaching out with ..": (
        lambda t: [str(_native(t, lambda s: s.replace('"kernel.py:', '"../kernel.py:')))],
        ["op.toml", "'../kernel.py' is outside the op directory"],
    ),
    "op name escaping the runs root": (
        lambda t: [str(_native(t, lambda s: s.replace('"rmsnorm"', '"../../../tmp/bad/escaped"')))],
        ["op.toml", "field name", "not a plain file name"],
    ),
    "a 300-character op name": (
        lambda t: [str(_native(t, lambda s: s.replace('"rmsnorm"', f'"{"a" * 300}"')))],
        ["op.toml", "field name", "300 characters, at most 100"],
    ),
    "a reference that returns all NaN": (
        lambda t: [
            str(
                _native(
                    t,
                    lambda s: s.replace("flops =", 'reference = "ref.py:rmsnorm"\nflops ='),
                    {"ref.py": NAN_REFERENCE},
                )
            )
        ],
        ["reference ref.py:rmsnorm", "holds no finite value", "checks nothing"],
    ),
    "workload draws an input it does not have": (
        lambda t: [
            str(
                _native(
                    t,
                    lambda s: s.replace(
                        "dims = { T = 256, H = 1024 }",
                        "dims = { T = 256, H = 1024 }\ndraws = { y = { scale = 2.0 } }",
                    ),
                )
            )
        ],
        ["op.toml", "workload 'tokens_256' draws ['y'], which are not inputs"],
    ),
    "not a safetensors file as a workload input": (
        lambda t: [
            str(_trace_set(t, edit_workload=lambda w: w["inputs"].update(_shadow(t)))),
            "--op",
            "rmsnorm_h256",
        ],
        ["shadow", "is not a safetensors file", "header too large"],
    ),
}

NAN_REFERENCE = (
    "import torch\n\n\ndef rmsnorm(x, weight):\n    return torch.full_like(x, float('nan'))\n"
)


def _linked(tmp: Path, name: str, target: str) -> Path:
    op = _native(tmp)
    (op / name).symlink_to(target)
    return op


def _outside(tmp: Path) -> Path:
    """A copy of the kernel outside the op directory, by absolute path."""
    outside = tmp / "elsewhere" / "kernel.py"
    outside.parent.mkdir()
    shutil.copy(EXAMPLES / "rmsnorm_torch" / "kernel.py", outside)
    return outside


def _shadow(tmp: Path) -> dict:
    """A workload input read from a file in /etc/shadow's format (not a safetensors file), kept
    inside the trace set: the sandbox that loads a spec sees nothing else of the host."""
    path = tmp / "ts" / "blob" / "shadow"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("root:*:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n")
    return {"hidden_states": {"type": "safetensors", "path": str(path), "tensor_key": "x"}}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(tmp_path, case, capfd):
    make_args, fragments = CASES[case]
    args = make_args(tmp_path)
    out_root = tmp_path / "tasks"
    done = cli_in_process(capfd, "freeze", *args, "--out", str(out_root / "task"), cwd=tmp_path)
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


# Freeze-time integrity: the oracle id is re-derived on every read of a task.


def _editable_copy(task: Path, dest: Path) -> Path:
    shutil.copytree(task, dest)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def _one_line(done, command: str, *fragments: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"bakeoff {command}: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_a_forged_oracle_id_is_refused(tmp_path, frozen_rmsnorm):
    from kernel_bakeoff.scripts import manifest

    task = _editable_copy(frozen_rmsnorm, tmp_path / "task")
    path = task / manifest.MANIFEST
    data = json.loads(path.read_text())
    real = data["oracle_sha256"]
    assert manifest.verify(task) == real
    data["oracle_sha256"] = ("1" if real[0] == "0" else "0") + real[1:]  # one byte changed
    path.write_text(json.dumps(data))
    kernel = str(EXAMPLES / "rmsnorm_torch" / "kernel.py")
    done = run_cli("check", str(task), kernel, "--json")
    _one_line(done, "check", "MANIFEST.json", "oracle_sha256 is not the one its files give")
    assert done.stdout == "" and data["oracle_sha256"] not in done.stderr


@pytest.mark.parametrize(
    "damage",
    [lambda t: t[: len(t) // 2], lambda t: "[]", lambda t: '{"files": {"a": 1}}', lambda t: ""],
    ids=["truncated", "a list", "wrong types", "empty"],
)
def test_a_damaged_manifest_is_one_line(tmp_path, frozen_rmsnorm, damage):
    task = _editable_copy(frozen_rmsnorm, tmp_path / "task")
    path = task / "MANIFEST.json"
    path.write_text(damage(path.read_text()))
    kernel = str(EXAMPLES / "rmsnorm_torch" / "kernel.py")
    _one_line(run_cli("check", str(task), kernel), "check", "MANIFEST.json", "not a manifest")


# Usage errors and numbers that are not numbers: one line, before anything starts.


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["run", "KERNEL", "--check-timeout", "nan"], "check_timeout_s: must be positive and"),
        (["run", "KERNEL", "--lane-timeout", "inf"], "lane_timeout_s: must be positive and"),
        (["run", "KERNEL", "--rounds", "0"], "argument --rounds: must be positive, got 0"),
        (["check", "KERNEL", "KERNEL", "--timeout", "0"], "argument --timeout"),
        (["check", "KERNEL", "KERNEL", "--timeout", "-inf"], "argument --timeout"),
        (["run", "KERNEL", "--budget", "many"], "invalid int value: 'many'"),
        (["freeze"], "the following arguments are required: kernel_path"),
        (["frieze", "KERNEL"], "invalid choice: 'frieze'"),
    ],
)
def test_usage_errors_are_one_line(tmp_path, args, fragment, capfd):
    kernel = str(EXAMPLES / "rmsnorm_torch")
    done = cli_in_process(capfd, *[kernel if a == "KERNEL" else a for a in args], cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], done.stderr
    assert lines[0].startswith("bakeoff"), lines[0]
    assert list(tmp_path.iterdir()) == []  # no run directory, nothing started


def test_help_still_shows_the_usage():
    done = run_cli("run", "--help")
    assert done.returncode == 0 and "--check-timeout" in done.stdout


def test_a_request_with_an_infinite_timeout_is_refused():
    from kernel_bakeoff.flows.opening import validate
    from kernel_bakeoff.tasks.models.request import parse_request

    kernel = str(EXAMPLES / "rmsnorm_torch")
    for field in ("lane_timeout_s", "check_timeout_s", "agent_timeout_s"):
        for value in (float("nan"), float("inf"), 0.0):
            with pytest.raises(BadInput, match=f"{field}: must be positive and finite"):
                validate(parse_request({"kernel_path": kernel, field: value}))


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("not a url", "not a url: cannot read the history database (ArgumentError"),
        ("sqlite:////no/such/dir/h.db", "unable to open database file"),
        ("postgresql://me:secret@127.0.0.1:1/db", "me:***@127.0.0.1:1/db"),
    ],
)
def test_history_with_a_bad_database_url_is_one_line(tmp_path, url, fragment, capfd):
    done = cli_in_process(capfd, "history", "rmsnorm", "--db", url, cwd=tmp_path)
    line = _one_line(done, "history", fragment)
    assert "secret" not in line


def test_control_characters_in_a_path_are_shown_escaped(tmp_path):
    missing = tmp_path / "red\x1b[31mtext\nsecond"
    done = run_cli("freeze", str(missing))
    line = _one_line(done, "freeze", "red\\x1b[31mtext\\nsecond", "no such file or directory")
    assert "\x1b" not in done.stderr and line


def test_a_failed_freeze_leaves_no_runs_directory(tmp_path):
    """The default output (runs/tasks/<op>) is made only for a freeze that succeeds: a baseline
    that fails its own check (its entry disagrees with its reference) leaves nothing."""
    op = _native(
        tmp_path,
        lambda s: s.replace("flops =", 'reference = "ref.py:rmsnorm"\nflops ='),
        {
            "ref.py": (EXAMPLES / "rmsnorm_torch" / "kernel.py").read_text(),
            "kernel.py": "def rmsnorm(x, weight, eps=1e-6):\n    return x * weight\n",
        },
    )
    work = tmp_path / "work"
    work.mkdir()
    done = run_cli("freeze", str(op), cwd=work)
    _one_line(done, "freeze", "does not pass its own check")
    assert list(work.iterdir()) == []


def test_a_path_the_file_system_refuses_is_one_line(tmp_path):
    too_long = tmp_path / ("x" * 300) / "task"
    done = run_cli("freeze", str(EXAMPLES / "rmsnorm_torch"), "--out", str(too_long))
    _one_line(done, "freeze", "x" * 300, "File name too long")
    assert list(tmp_path.iterdir()) == []
