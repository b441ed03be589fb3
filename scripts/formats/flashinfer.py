"""A flashinfer-bench trace set: one operator's definition, workloads and expert solution.

Point at an operator with `bakeoff freeze TRACE_SET/definitions/<op_type>/<op>.json`, or with
`bakeoff freeze TRACE_SET --op NAME`; `--solution` names the expert baseline (an author, a
solution file name, or a solution JSON path). Without it the author `baseline` is taken, else
the first author with a warning, else the definition's reference itself.

The operator is written out as a self-contained source directory, copied into baseline_src/:
  definition.json  workloads.jsonl  reference.py (the definition's `run`)
  solution.json    solution/<its sources>          (the frozen baseline's entry)
  blobs/           the safetensors files workloads load inputs from
Inputs come from spec.json (var-axis values and input sources ride in it) and blobs/.
Solutions in destination-passing style get their outputs allocated and passed after the inputs.
"""

from __future__ import annotations

import ast
import hashlib
import shutil
from pathlib import Path

import torch

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.formats import blobs, traceset
from kernel_bakeoff.scripts.formats.staging import scratch_dir, write_file
from kernel_bakeoff.scripts.program import drawn, generate, generator, resolve_entry, shape_of
from kernel_bakeoff.scripts.spec import DTYPES, InputSpec, OpKind, OpSpec, Workload

OPTIONS = ("op", "solution")
REFERENCE = "reference.py:run"
SOLUTION_DIR = "solution"
BLOBS_DIR = "blobs"
LANGUAGES = {"python": "torch", "pytorch": "torch", "torch": "torch"}  # others keep their name
KINDS = {
    "gemm": OpKind.gemm,
    "grouped_gemm": OpKind.gemm,
    "moe": OpKind.moe,
    "rope": OpKind.elementwise,
    "activation": OpKind.elementwise,
    "sampling": OpKind.other,
    "gdn": OpKind.scan,
    "mamba_ssu": OpKind.scan,
}
ATTENTION_PREFIXES = ("gqa", "mla", "dsa", "nsa", "mha", "attention")

list_operators = traceset.list_operators


def detect(path: Path) -> bool:
    return traceset.looks_like_trace_set(path)


def kind_of(op_type: str) -> OpKind:
    if op_type in KINDS:
        return KINDS[op_type]
    if op_type.startswith(ATTENTION_PREFIXES):
        return OpKind.attention
    if "norm" in op_type:
        return OpKind.norm
    return OpKind.gemm if "gemm" in op_type else OpKind.other


def _definition_path(path: Path, root: Path, op: str | None) -> Path:
    if path.is_file():
        found = path.resolve()
        if op is not None and op not in (found.stem, f"{found.parent.name}/{found.stem}"):
            raise BadInput(f"--op {op}", f"names another operator than {path}")
        return found
    return traceset.locate(root, op)


def load_spec(path: Path, op: str | None = None, solution: str | None = None):
    path = Path(path)
    root = traceset.find_root(path)
    def_path = _definition_path(path, root, op)
    definition = traceset.read_definition(def_path)
    wl_path = traceset.workloads_file(root, def_path)
    records = traceset.read_workloads(wl_path)
    sol_path = traceset.pick_solution(root, def_path, solution)
    sol = traceset.read_solution(sol_path, definition.name) if sol_path else None
    blobs = _blobs(root, records)
    spec = _to_spec(definition, records, sol, str(sol_path), blobs)
    staged = _stage(def_path, wl_path, definition, sol_path, sol)
    for blob, name in blobs.values():
        (staged / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(blob, staged / name)
    return spec, staged


def _blobs(root: Path, records) -> dict[str, tuple[Path, str]]:
    """Tensor files the workloads load: their path as written -> (file, place in the staging)."""
    blobs = {}
    home = Path(root).resolve()
    for _, rec in records:
        for source in rec.inputs.values():
            if source.type == "safetensors" and source.path not in blobs:
                path = (home / source.path).resolve()  # relative to the root, or absolute
                if path.is_relative_to(home):
                    name = path.relative_to(home).as_posix()
                else:
                    name = f"{hashlib.sha256(str(path).encode()).hexdigest()[:8]}_{path.name}"
                blobs[source.path] = (path, f"{BLOBS_DIR}/{name}")
    return blobs


def _torch_dtype(dtype: str, where: str) -> str:
    if dtype not in DTYPES:
        raise BadInput(where, f"dtype {dtype} is not supported by this harness (one of {DTYPES})")
    return dtype


def _to_spec(definition, records, sol, sol_where: str, blobs: dict) -> OpSpec:
    where = f"definition {definition.name}"
    consts = definition.const_axes()
    inputs = [
        InputSpec(
            name=name,
            shape=[consts.get(a, a) for a in t.shape or []],
            dtype=_torch_dtype(t.dtype, f"{where}: input {name!r}"),
        )
        for name, t in definition.inputs.items()
    ]
    outputs = {
        name: {"shape": t.shape, "dtype": _torch_dtype(t.dtype, f"{where}: output {name!r}")}
        for name, t in definition.outputs.items()
    }
    scalars = [name for name, t in definition.inputs.items() if t.shape is None]
    workloads = [_workload(definition, inputs, scalars, w, rec, blobs) for w, rec in records]
    solution = _solution_summary(sol, definition, sol_where) if sol else None
    return OpSpec(
        name=definition.name,
        kind=kind_of(definition.op_type),
        language=_language(sol.spec.language) if sol else "torch",
        format="flashinfer",
        entry=f"{SOLUTION_DIR}/{sol.spec.entry_file()}:{sol.spec.entry_function()}"
        if sol
        else REFERENCE,
        reference=REFERENCE if sol else None,
        inputs=inputs,
        workloads=workloads,
        flops=_flops(definition),
        extra={
            "op_type": definition.op_type,
            "axes": {k: a.model_dump(exclude_none=True) for k, a in definition.axes.items()},
            "outputs": outputs,
            "scalar_inputs": scalars,
            "solution": solution,
        },
    )


def _solution_summary(sol, definition, where: str) -> dict:
    """What spec.json keeps of the chosen solution, including how its entry is called."""
    dps = _destination_passing(
        sol.spec.destination_passing_style,
        sol.entry_source(),
        sol.spec.entry_function(),
        len(definition.inputs) + len(definition.outputs),
        where,
    )
    if dps:
        _check_outputs_bound(definition, where)
    return {
        "name": sol.name,
        "author": sol.author,
        "language": sol.spec.language,
        "entry_point": sol.spec.entry_point,
        "destination_passing_style": dps,
    }


def _check_outputs_bound(definition, where: str) -> None:
    """Outputs allocated for a destination-passing entry take var-axis sizes from the inputs."""
    bound = {a for t in definition.inputs.values() for a in t.shape or []}
    for name, t in definition.outputs.items():
        for axis in t.shape or []:
            if definition.axes[axis].type == "var" and axis not in bound:
                raise BadInput(
                    where,
                    f"output {name!r} needs var axis {axis!r}, which no input's shape gives, so "
                    "it cannot be allocated for a destination-passing entry",
                )


def _language(name: str) -> str:
    return LANGUAGES.get(name.lower(), name.lower())


def _flops(definition) -> str | None:
    """2*M*N*K for a GEMM whose axes are named so, constants written in."""
    if kind_of(definition.op_type) is not OpKind.gemm or not {"M", "N", "K"} <= set(
        definition.axes
    ):
        return None
    consts = definition.const_axes()
    return "2*" + "*".join(str(consts.get(a, a)) for a in ("M", "N", "K"))


def _workload(definition, inputs: list[InputSpec], scalars: list[str], where: str, rec, blobs):
    where = f"{where} (workload {rec.uuid})"
    var = definition.var_axes()
    for axis in rec.axes:
        if axis not in definition.axes:
            raise BadInput(where, f"axis {axis!r} is not an axis of {definition.name}")
        if axis not in var:
            raise BadInput(where, f"axis {axis!r} is const in the definition; only var axes vary")
    dims = {a: rec.axes[a] for a in var if a in rec.axes}
    sources = {k: v.model_dump(exclude_none=True) for k, v in rec.inputs.items()}
    for inp in inputs:
        shape = shape_of(inp, dims, where)  # every dimension an input needs is set
        source = rec.inputs.get(inp.name)
        if source is None:
            raise BadInput(where, f"input {inp.name!r} has no source (random, scalar, ...)")
        if (source.type == "scalar") != (inp.name in scalars):
            raise BadInput(
                where,
                f"input {inp.name!r} is a {'scalar' if inp.name in scalars else 'tensor'} "
                f"in the definition but its source is {source.type!r}",
            )
        if source.type == "safetensors":
            path, staged_name = blobs[source.path]
            _check_tensor_file(inp, shape, path, source.tensor_key, where)
            sources[inp.name]["path"] = staged_name
    _check_constraints(definition, {**definition.const_axes(), **dims}, where)
    return Workload(name=rec.uuid, dims=dims, extra={"inputs": sources})


def _check_tensor_file(inp: InputSpec, shape: list[int], path: Path, key: str, where: str):
    found_shape, found_dtype = blobs.describe(path, key, where)
    if found_shape != shape or found_dtype != getattr(torch, inp.dtype):
        raise BadInput(
            where,
            f"input {inp.name!r}: {path.name}[{key!r}] is {found_shape} "
            f"{str(found_dtype).removeprefix('torch.')}; the definition wants {shape} {inp.dtype}",
        )


def _check_constraints(definition, axes: dict[str, int], where: str) -> None:
    for expr in definition.constraints:
        try:
            holds = eval(expr, {"__builtins__": {}}, dict(axes))  # axis arithmetic only
        except Exception:
            continue  # refers to something other than axes: not checkable from shapes
        if not holds:
            raise BadInput(where, f"constraint {expr!r} does not hold for axes {axes}")


def _positional_count(source: str, function: str) -> int | None:
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            if node.args.vararg is not None:
                return None
            return len(node.args.posonlyargs) + len(node.args.args)
    return None


def _destination_passing(declared, source: str, function: str, n_args: int, where: str) -> bool:
    """As the solution declares it; undeclared, when the entry takes inputs and outputs both."""
    if declared is not None:
        return declared
    try:
        return _positional_count(source, function) == n_args
    except SyntaxError as exc:
        raise BadInput(where, f"entry source is not valid Python: {exc.msg}") from None


def _stage(def_path: Path, wl_path: Path, definition, sol_path: Path | None, sol) -> Path:
    staged = scratch_dir("flashinfer")
    shutil.copy2(def_path, staged / "definition.json")
    shutil.copy2(wl_path, staged / "workloads.jsonl")
    (staged / "reference.py").write_text(definition.reference)
    if sol is not None:
        shutil.copy2(sol_path, staged / "solution.json")
        _write_sources(staged / SOLUTION_DIR, sol, str(sol_path))
    return staged


def _write_sources(root: Path, sol, where: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for source in sol.sources:
        write_file(root, source.path, source.content, where)


# ---- running ----------------------------------------------------------------------------------


def make_inputs(spec: OpSpec, src_dir: Path, workload, seed: int, device: str) -> list:
    """Random tensors from the seed (one generator, inputs in definition order); scalars and
    tensors from files as the workload gives them."""
    gen = generator(seed, device)
    sources = workload.extra["inputs"]
    values = []
    for inp in spec.inputs:
        source = sources[inp.name]
        if source["type"] == "scalar":
            values.append(source["value"])
        elif source["type"] == "safetensors":
            path = Path(src_dir) / source["path"]
            values.append(blobs.read_tensor(path, source["tensor_key"], str(path)).to(device))
        else:
            shape = shape_of(inp, workload.dims, f"workload {workload.name!r}")
            values.append(generate(drawn(inp, workload), shape, gen, device))
    return values


class DestinationPassing:
    """Calls a destination-passing entry: allocates the outputs the definition names, passes them
    after the inputs, and returns them as a value-returning entry would."""

    def __init__(self, fn, spec: OpSpec):
        self.fn = fn
        self.outputs = list(spec.extra["outputs"].values())
        self.consts = {k: a["value"] for k, a in spec.extra["axes"].items() if a["type"] == "const"}
        self.bindings = {}
        for i, inp in enumerate(spec.inputs):
            for d, axis in enumerate(inp.shape):
                if isinstance(axis, str):
                    self.bindings.setdefault(axis, (i, d))
        for o in self.outputs:
            unsized = set(o["shape"] or []) - set(self.consts) - set(self.bindings)
            if unsized:
                raise BadInput(spec.name, f"no input gives the size of output axes {unsized}")

    def __call__(self, *inputs):
        axes = dict(self.consts)
        axes.update({a: inputs[i].shape[d] for a, (i, d) in self.bindings.items()})
        device = next(t.device for t in inputs if isinstance(t, torch.Tensor))
        outs = [
            torch.empty(
                [axes[a] for a in o["shape"] or []], dtype=getattr(torch, o["dtype"]), device=device
            )
            for o in self.outputs
        ]
        self.fn(*inputs, *outs)
        return outs[0] if len(outs) == 1 else tuple(outs)


def load_callable(
    spec: OpSpec, src_dir: Path, entry: str, device: str, candidate: Path | None = None
):
    """The frozen baseline or reference by `entry`; or a candidate: a solution JSON, a directory
    of sources, or one .py file, whose entry is named like the baseline's."""
    solution = spec.extra.get("solution")
    if candidate is None:
        fn = resolve_entry(src_dir, entry, f"{src_dir}/{entry}")
        dps = solution is not None and entry == spec.entry and solution["destination_passing_style"]
    else:
        fn, dps = _candidate(spec, Path(candidate), solution)
    return DestinationPassing(fn, spec) if dps else fn


def _candidate(spec: OpSpec, path: Path, solution: dict | None):
    where = str(path)
    n_args = len(spec.inputs) + len(spec.extra["outputs"])
    if not path.exists():
        raise BadInput(where, "no such candidate file or directory")
    if path.suffix == ".json":
        sol = traceset.read_solution(path, spec.name)
        root = scratch_dir("candidate")
        _write_sources(root, sol, where)
        fn = resolve_entry(root, f"{sol.spec.entry_file()}:{sol.spec.entry_function()}", where)
        declared, source, function = (
            sol.spec.destination_passing_style,
            sol.entry_source(),
            sol.spec.entry_function(),
        )
    else:
        file, _, function = (solution or {}).get("entry_point", "main.py::run").partition("::")
        fn = resolve_entry(path, f"{file}:{function}", where)
        declared, source = None, (path / file if path.is_dir() else path).read_text()
    return fn, _destination_passing(declared, source, function, n_args, where)
