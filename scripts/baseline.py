"""The frozen baseline (`TASK/baseline.json`), typed: the one denominator of every speedup.

Freeze writes it (`scripts.freeze.measure_baseline`); the orchestration side reads it through
this model only (`load_task`, `FrozenBaseline.read`), never as a dict by key. Each timed
workload holds the baseline's check and its `Timing` flat, as frozen. The timing's statistics
other than the median are optional here: a task frozen by an older harness, and the tests'
hand-made tasks, hold only the median and the samples.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from kernel_bakeoff.scripts.verdict import Status, Timing

FILE = "baseline.json"


class BaselineCheck(BaseModel):
    """The baseline's own check at one workload."""

    status: Status = Status.PASSED
    max_rel_error: float | None = None
    tolerance: float | None = None


class BaselineWorkload(Timing, BaselineCheck):
    """A timed workload: its check and its timing (the fields of `Timing`)."""

    clock: str = ""
    sample_count: int = 0
    min_ms: float | None = None
    max_ms: float | None = None
    spread_ms: float | None = None
    samples_ms: list[float] = Field(default_factory=list)

    def samples(self) -> list[float]:
        """The recorded samples, or the median alone where none were kept."""
        return self.samples_ms or [self.median_ms]


class FrozenBaseline(BaseModel):
    device: str = ""  # "cuda", "hip" or "cpu": where it was timed
    device_name: str = ""
    workloads: dict[str, BaselineWorkload] = Field(default_factory=dict)  # timed workloads
    checked_only: dict[str, BaselineCheck] = Field(default_factory=dict)  # untimed sizes

    @classmethod
    def read(cls, task_dir: Path) -> FrozenBaseline:
        return cls.model_validate_json((Path(task_dir) / FILE).read_text())

    def medians(self) -> dict[str, float]:
        """Per timed workload, the baseline's median (ms): what every speedup divides."""
        return {name: w.median_ms for name, w in self.workloads.items()}
