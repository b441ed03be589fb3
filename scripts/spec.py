"""The op spec: one pydantic model that every input format is loaded into."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kernel_bakeoff.scripts.safe_paths import name_problem

DTYPES = (
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)

# Norm-relative error bound ||out - ref|| / ||ref|| per output dtype. fp32 is strict enough to
# refuse tf32 (~3e-4) and bf16-grade (~1e-3..1e-2) arithmetic; an op spec may loosen it.
DEFAULT_TOLERANCE = {
    "float64": 1e-10,
    "float32": 2e-5,
    "float16": 5e-3,
    "bfloat16": 2e-2,
}


class OpKind(str, Enum):
    gemm = "gemm"
    attention = "attention"
    norm = "norm"
    reduction = "reduction"
    elementwise = "elementwise"
    moe = "moe"
    scan = "scan"
    conv = "conv"
    other = "other"


Init = Literal["randn", "rand", "randint", "ones", "zeros"]


class InputSpec(BaseModel):
    """One tensor argument: its shape (ints or dimension names), dtype and value distribution:
    randn/rand times `scale` plus `offset`, integers in [low, high), or ones/zeros."""

    model_config = ConfigDict(extra="forbid")
    name: str
    shape: list[int | str]
    dtype: str = "float32"
    init: Init = "randn"
    scale: float = 1.0
    offset: float = 0.0
    low: int = 0
    high: int = 2

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, v: str) -> str:
        if v not in DTYPES:
            raise ValueError(f"unknown dtype {v!r} (one of {', '.join(DTYPES)})")
        return v


class InputDraw(BaseModel):
    """A workload's own distribution for one input: the fields it sets replace the input's."""

    model_config = ConfigDict(extra="forbid")
    init: Init | None = None
    scale: float | None = None
    offset: float | None = None
    low: int | None = None
    high: int | None = None


class Workload(BaseModel):
    """A named point in the op's shape space: values for the dimension names."""

    model_config = ConfigDict(extra="forbid")
    name: str
    dims: dict[str, int] = Field(default_factory=dict)
    # Per-input distributions at this workload (native op.toml: `draws = { x = { scale = 4.0 } }`),
    # used by every check: how a user makes an oracle discriminate (scripts/oracle_probe.py).
    draws: dict[str, InputDraw] = Field(default_factory=dict)
    # Format-specific payload (e.g. a flashinfer-bench workload's input descriptors).
    extra: dict = Field(default_factory=dict)
    # False: a size the user did not list, added at freeze (scripts/sizes.py): a candidate must
    # be right there, but it is not timed and takes no part in any speedup.
    timed: bool = True


class SizeProbe(BaseModel):
    """A size the user did not list, tried on the reference at freeze time."""

    model_config = ConfigDict(extra="forbid")
    workload: str  # the name it has (or would have had) as a correctness-only workload
    checked: bool  # True: it is one of the spec's workloads, untimed
    reason: str | None = None  # why it is not, when it is not


class Degenerate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str
    workloads: dict[str, dict] = Field(default_factory=dict)


class OpSpec(BaseModel):
    """Everything the harness needs to know about an op, whatever format it came in."""

    model_config = ConfigDict(extra="forbid")
    name: str
    kind: OpKind = OpKind.other
    language: str
    format: Literal["native", "kernelbench", "flashinfer"] = "native"
    entry: str  # "file.py:function" (native), "file.py:Model" (kernelbench), solution entry (flashinfer)
    reference: str | None = None  # defaults to the entry: the frozen baseline is its own reference
    inputs: list[InputSpec] = Field(default_factory=list)
    workloads: list[Workload] = Field(min_length=1)
    tolerance: dict[str, float] = Field(default_factory=dict)
    flops: str | None = None  # python expression over dims, e.g. "2*M*N*K"
    extra: dict = Field(default_factory=dict)
    sizes_probed: list[SizeProbe] = Field(default_factory=list)  # filled by freeze
    # Filled by freeze where a constant, zeros or an input passed through passes the check
    # (scripts/oracle_probe.py): its one-line `message`, and each timed workload's figures.
    degenerate: Degenerate | None = None

    @classmethod
    def read(cls, task_dir: Path | str) -> OpSpec:
        """A frozen task's spec (`TASK/spec.json`), as freeze wrote it."""
        return cls.model_validate_json((Path(task_dir) / "spec.json").read_text())

    @field_validator("name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        problem = name_problem(v)
        if problem:
            raise ValueError(problem)
        return v

    @model_validator(mode="after")
    def _entry_has_symbol(self) -> OpSpec:
        for field in ("entry", "reference"):
            value = getattr(self, field)
            if value is not None and ":" not in value:
                raise ValueError(f"{field} must look like 'file.py:name', got {value!r}")
        names = [w.name for w in self.workloads]
        if len(set(names)) != len(names):
            raise ValueError(f"workload names repeat: {names}")
        if not any(w.timed for w in self.workloads):
            raise ValueError("at least one workload is timed")
        inputs = {i.name for i in self.inputs}
        for w in self.workloads:
            unknown = sorted(set(w.draws) - inputs)
            if unknown:
                raise ValueError(f"workload {w.name!r} draws {unknown}, which are not inputs")
        return self

    def tolerance_for(self, dtype: str) -> float:
        return self.tolerance.get(dtype, DEFAULT_TOLERANCE.get(dtype, 0.0))

    @property
    def reference_entry(self) -> str:
        return self.reference or self.entry

    @property
    def timed_workloads(self) -> list[Workload]:
        return [w for w in self.workloads if w.timed]

    def as_listed(self) -> OpSpec:
        """The spec as its input lists it: without the sizes freeze added."""
        return self.model_copy(
            update={"workloads": self.timed_workloads, "sizes_probed": [], "degenerate": None}
        )

    def workload(self, name: str) -> Workload:
        for w in self.workloads:
            if w.name == name:
                return w
        raise KeyError(name)
