"""The flashinfer-bench trace-set layout: its schema and how one operator is found in it.

  definitions/<op_type>/<op>.json                 axes (const / var), inputs, outputs, reference
  workloads/<op_type>/<op>.jsonl                  one workload a line: var-axis values, input sources
  solutions/<author>/<op_type>/<op>/<name>.json   spec (language, entry_point), sources [{path, content}]

Field names follow flashinfer-bench's schema. Fields this tool does not use are ignored, so files
written by newer versions still load; the fields it uses are checked.
"""

from __future__ import annotations

import ast
import json
import logging
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.program import top_level_names

log = logging.getLogger("bakeoff.formats.flashinfer")

BASELINE_AUTHOR = "baseline"
FI_DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "float4_e2m1",
    "int64",
    "int32",
    "int16",
    "int8",
    "bool",
)


class _Schema(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Axis(_Schema):
    type: Literal["const", "var"]
    value: int | None = None

    @model_validator(mode="after")
    def _const_has_value(self) -> Axis:
        if self.type == "const" and (self.value is None or self.value <= 0):
            raise ValueError("a const axis needs a positive integer value")
        return self


class Tensor(_Schema):
    shape: list[str] | None  # None: a python scalar
    dtype: str

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, v: str) -> str:
        if v not in FI_DTYPES:
            raise ValueError(f"unknown dtype {v!r} (one of {', '.join(FI_DTYPES)})")
        return v


class Definition(_Schema):
    name: str = Field(min_length=1)
    op_type: str = Field(min_length=1)
    axes: dict[str, Axis] = Field(min_length=1)
    inputs: dict[str, Tensor] = Field(min_length=1)
    outputs: dict[str, Tensor] = Field(min_length=1)
    reference: str = Field(min_length=1)
    constraints: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _old_type_field(cls, data):
        # Early flashinfer-bench files named the category `type`.
        if isinstance(data, dict) and "op_type" not in data and "type" in data:
            data = {**data, "op_type": data["type"]}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Definition:
        for group in ("inputs", "outputs"):
            for name, tensor in getattr(self, group).items():
                for axis in tensor.shape or []:
                    if axis not in self.axes:
                        raise ValueError(f"{group[:-1]} {name!r} uses axis {axis!r}, not in axes")
        try:
            tree = ast.parse(self.reference)
        except SyntaxError as exc:
            msg = f"reference is not valid Python: {exc.msg} (line {exc.lineno})"
            raise ValueError(msg) from None
        if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body):
            raise ValueError("reference defines no top-level function 'run'")
        return self

    def const_axes(self) -> dict[str, int]:
        return {k: a.value for k, a in self.axes.items() if a.type == "const"}

    def var_axes(self) -> list[str]:
        return [k for k, a in self.axes.items() if a.type == "var"]


class InputSource(_Schema):
    type: Literal["random", "scalar", "safetensors"]
    value: bool | int | float | None = None
    path: str | None = None
    tensor_key: str | None = None

    @model_validator(mode="after")
    def _fields_for_type(self) -> InputSource:
        if self.type == "scalar" and self.value is None:
            raise ValueError("a scalar input needs a value")
        if self.type == "safetensors" and not (self.path and self.tensor_key):
            raise ValueError("a safetensors input needs path and tensor_key")
        return self


class WorkloadRecord(_Schema):
    uuid: str = Field(min_length=1)
    axes: dict[str, int] = Field(default_factory=dict)
    inputs: dict[str, InputSource] = Field(default_factory=dict)


class SourceFile(_Schema):
    path: str = Field(min_length=1)
    content: str


class BuildSpec(_Schema):
    language: str
    entry_point: str
    target_hardware: list[str] = Field(default_factory=list)
    destination_passing_style: bool | None = None  # None: decided from the entry's signature

    @field_validator("entry_point")
    @classmethod
    def _file_and_function(cls, v: str) -> str:
        file, sep, function = v.partition("::")
        if not (sep and file and function):
            raise ValueError(f"entry_point must look like 'main.py::run', got {v!r}")
        if not file.endswith(".py"):
            raise ValueError(
                f"entry_point {v!r} is not a python file; only python-launched "
                "solutions (python, triton, ...) can be loaded"
            )
        return v

    def entry_file(self) -> str:
        return self.entry_point.partition("::")[0]

    def entry_function(self) -> str:
        return self.entry_point.partition("::")[2]


class Solution(_Schema):
    name: str = Field(min_length=1)
    definition: str = Field(min_length=1)
    author: str = Field(min_length=1)
    spec: BuildSpec
    sources: list[SourceFile] = Field(min_length=1)

    @model_validator(mode="after")
    def _entry_in_sources(self) -> Solution:
        paths = [s.path for s in self.sources]
        if len(set(paths)) != len(paths):
            raise ValueError(f"source paths repeat: {paths}")
        if self.spec.entry_file() not in paths:
            raise ValueError(f"entry file {self.spec.entry_file()!r} is not among the sources")
        try:
            names = top_level_names(self.entry_source())
        except SyntaxError as exc:
            msg = f"{self.spec.entry_file()} is not valid Python: {exc.msg} (line {exc.lineno})"
            raise ValueError(msg) from None
        if names is not None and self.spec.entry_function() not in names:
            raise ValueError(
                f"entry_point {self.spec.entry_point!r}: {self.spec.entry_file()} defines no "
                f"{self.spec.entry_function()!r}"
            )
        return self

    def entry_source(self) -> str:
        return next(s.content for s in self.sources if s.path == self.spec.entry_file())


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}:{exc.lineno}", f"not valid JSON: {exc.msg}") from None


def _validate(model, data, where: str):
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise BadInput.from_validation(where, err) from None


# ---- finding things -------------------------------------------------------------------------


def looks_like_trace_set(path: Path) -> bool:
    path = Path(path)
    if path.is_dir():
        return any((path / d).is_dir() for d in ("definitions", "workloads", "solutions"))
    return path.suffix == ".json" and "definitions" in path.resolve().parts[:-1]


def find_root(path: Path) -> Path:
    """The trace-set root: `path` or the nearest directory above it that holds definitions/."""
    path = Path(path)
    if not path.exists():
        raise BadInput(str(path), "no such file or directory")
    for start in (path, path.resolve()):  # the path as given reads better in messages
        start = start if start.is_dir() else start.parent
        for candidate in (start, *start.parents):
            if (candidate / "definitions").is_dir():
                return candidate
    raise BadInput(
        str(path),
        "not a flashinfer-bench trace set: no definitions/ directory "
        "(expected definitions/<op_type>/<op>.json beside workloads/)",
    )


def definition_files(root: Path) -> list[Path]:
    return sorted(Path(root).glob("definitions/*/*.json"))


def workloads_file(root: Path, definition_path: Path) -> Path:
    return Path(root) / "workloads" / definition_path.parent.name / f"{definition_path.stem}.jsonl"


def _workload_lines(path: Path) -> list[tuple[int, str]]:
    if not path.is_file():
        return []
    return [(i, line) for i, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]


def solution_files(root: Path, definition_path: Path) -> list[Path]:
    op_type, name = definition_path.parent.name, definition_path.stem
    return sorted(Path(root).glob(f"solutions/*/{op_type}/{name}/*.json"))


def author_of(root: Path, solution_path: Path) -> str:
    return solution_path.relative_to(Path(root) / "solutions").parts[0]


def list_operators(root: Path) -> list[dict]:
    """Operators that have at least one workload, with their workload count and solution authors."""
    root = find_root(root)
    ops = []
    for path in definition_files(root):
        count = len(_workload_lines(workloads_file(root, path)))
        if count:
            authors = sorted({author_of(root, s) for s in solution_files(root, path)})
            ops.append(
                {
                    "op_type": path.parent.name,
                    "name": path.stem,
                    "workloads": count,
                    "authors": authors,
                }
            )
    return ops


def locate(root: Path, op: str | None) -> Path:
    """The definition file for `op` ('name' or 'op_type/name'); the only one when op is None."""
    files = definition_files(root)
    if op is None:
        with_workloads = [p for p in files if _workload_lines(workloads_file(root, p))]
        if len(with_workloads) == 1:
            return with_workloads[0]
        if not with_workloads:
            raise BadInput(str(root), "no operator in this trace set has workloads")
        names = [f"{p.parent.name}/{p.stem}" for p in with_workloads]
        raise BadInput(
            str(root), f"holds {len(names)} operators with workloads; pick one with --op: {names}"
        )
    op_type, _, name = op.rpartition("/")
    matches = [p for p in files if p.stem == name and op_type in ("", p.parent.name)]
    if not matches:
        raise BadInput(
            f"--op {op}", f"no such operator in {root}/definitions (see `bakeoff list {root}`)"
        )
    if len(matches) > 1:
        both = [f"{p.parent.name}/{p.stem}" for p in matches]
        raise BadInput(f"--op {op}", f"defined under several op types; name one of {both}")
    return matches[0]


def read_definition(path: Path) -> Definition:
    return _validate(Definition, _read_json(path), str(path))


def read_workloads(path: Path) -> list[tuple[str, WorkloadRecord]]:
    """(where, record) per line; a line is a bare workload or a trace record holding one."""
    lines = _workload_lines(path)
    if not lines:
        raise BadInput(str(path), "no workloads: the file is missing or empty")
    records = []
    for lineno, line in lines:
        where = f"{path}:{lineno}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInput(where, f"not valid JSON: {exc.msg}") from None
        if isinstance(data, dict) and isinstance(data.get("workload"), dict):
            data = data["workload"]
        records.append((where, _validate(WorkloadRecord, data, where)))
    return records


def read_solution(path: Path, definition: str | None = None) -> Solution:
    solution = _validate(Solution, _read_json(path), str(path))
    if definition is not None and solution.definition != definition:
        raise BadInput(
            str(path), f"solves {solution.definition!r}, not the operator {definition!r}"
        )
    return solution


def pick_solution(root: Path, definition_path: Path, choice: str | None) -> Path | None:
    """The expert baseline: author `baseline`, else the first author (with a warning), else the
    one `choice` names (an author, a solution file name, or a path to a solution JSON)."""
    files = solution_files(root, definition_path)
    op = f"{definition_path.parent.name}/{definition_path.stem}"
    if choice is not None:
        as_path = Path(choice)
        if as_path.suffix == ".json":
            if not as_path.is_file():
                raise BadInput(f"--solution {choice}", "no such solution file")
            return as_path
        for match in (
            [f for f in files if author_of(root, f) == choice],
            [f for f in files if f.stem == choice],
        ):
            if match:
                return match[0]
        authors = sorted({author_of(root, f) for f in files})
        raise BadInput(
            f"--solution {choice}",
            f"no author or solution of that name for {op}; authors: {authors}",
        )
    if not files:
        log.warning("%s: no solutions; the definition's reference is frozen as the baseline", op)
        return None
    preferred = [f for f in files if author_of(root, f) == BASELINE_AUTHOR]
    if preferred:
        return preferred[0]
    authors = sorted({author_of(root, f) for f in files})
    log.warning(
        "%s: no %r author; freezing %s's solution %s as the baseline (authors: %s; "
        "choose with --solution)",
        op,
        BASELINE_AUTHOR,
        authors[0],
        files[0].name,
        ", ".join(authors),
    )
    return files[0]
