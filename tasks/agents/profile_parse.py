"""Profilers' output, parsed into one row per kernel: ncu's CSV, rocprofv3's CSV files, and the
torch.profiler table `profile_run` prints on a CPU.

- ncu `--csv --page details`: one row per (launch, metric), columns "ID", "Kernel Name",
  "Section Name", "Metric Name", "Metric Unit", "Metric Value" among others; numbers carry
  thousands separators ("1,215,000.00"); the program's own output and `==PROF==` lines come
  before and between. Read: Duration, DRAM Throughput and Compute (SM) Throughput (% of peak,
  "GPU Speed Of Light Throughput"), Memory Throughput in bytes per second (where the Memory
  Workload Analysis section was collected), Achieved Occupancy.
- rocprofv3 `--kernel-trace --stats`: `*kernel_trace.csv` (one row per dispatch, Kernel_Name,
  Start_Timestamp, End_Timestamp in ns) and `*kernel_stats.csv` (Name, Calls, TotalDurationNs,
  Percentage); `*counter_collection.csv` (Kernel_Name, Counter_Name, Counter_Value) where
  counters were asked for: FETCH_SIZE and WRITE_SIZE (KB), OccupancyPercent, VALUBusy.

Everything parsed here was printed by, or beside, the candidate's own process: a candidate can
print rows that look like a profiler's. A digest is advice to the model and context for the
reviewer, never a measurement of the record (the verdicts are).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel

TORCH_MARK = "BAKEOFF_TORCH_PROFILE "
CALLS = 3  # calls of the op that profile_run makes under the profiler
NAME_CHARS = 80
OUTSIDE = "(outside torch operators: Python, Triton's interpreter)"

TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
TIME_UNITS |= {"second": 1e6, "s": 1e6}
RATE_UNITS = {"byte/second": 1.0, "Kbyte/second": 1e3, "Mbyte/second": 1e6}
RATE_UNITS |= {"Gbyte/second": 1e9, "Tbyte/second": 1e12}


class KernelStat(BaseModel):
    """One kernel (by name) over every launch the profiler saw."""

    name: str
    calls: int = 0
    time_us: float = 0.0
    bandwidth: float | None = None  # bytes/s achieved, time-weighted over launches
    dram_pct: float | None = None  # of the device's peak (the profiler's own figure)
    compute_pct: float | None = None  # SM throughput (ncu) or VALU busy (rocprofv3), % of peak
    occupancy_pct: float | None = None


def clean_name(name: str) -> str:
    """A kernel's name as the digest shows it: printable, one line, bounded (the candidate
    chose it, and the reviewer reads it)."""
    text = re.sub(r"[^\x20-\x7e]", "?", str(name)).strip()
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 3] + "..."


def number(text) -> float | None:
    try:
        return float(str(text).replace(",", "").strip())
    except ValueError:
        return None


def _csv_rows(text: str, first_column: str, mixed: bool = False) -> list[dict]:
    """The rows of the CSV table whose header starts with `first_column`. `mixed`: the text is
    a program's output with the table in it (ncu's stdout), whose rows are the quoted lines."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f'"{first_column}"')), None)
    if start is None:
        return []
    rest = [ln for ln in lines[start + 1 :] if ln.strip() and (ln.startswith('"') or not mixed)]
    body = [lines[start], *rest]
    return list(csv.DictReader(io.StringIO("\n".join(body))))


class _Weighted:
    """A per-launch figure averaged by launch time."""

    def __init__(self):
        self.sum, self.weight = 0.0, 0.0

    def add(self, value: float | None, weight: float) -> None:
        if value is not None:
            self.sum += value * weight
            self.weight += weight

    def value(self) -> float | None:
        return self.sum / self.weight if self.weight > 0 else None


def parse_ncu(text: str) -> list[KernelStat]:
    launches: dict[str, dict] = defaultdict(dict)
    names: dict[str, str] = {}
    for row in _csv_rows(text, "ID", mixed=True):
        launch = row.get("ID", "")
        names[launch] = row.get("Kernel Name", "?")
        metric, unit = row.get("Metric Name", ""), row.get("Metric Unit", "")
        value = number(row.get("Metric Value", ""))
        if value is None:
            continue
        got = launches[launch]
        if metric == "Duration" and unit in TIME_UNITS:
            got["time_us"] = value * TIME_UNITS[unit]
        elif metric == "DRAM Throughput" and unit == "%":
            got["dram_pct"] = value
        elif metric == "Compute (SM) Throughput" and unit == "%":
            got["compute_pct"] = value
        elif metric == "Memory Throughput" and unit in RATE_UNITS:
            got["bandwidth"] = value * RATE_UNITS[unit]
        elif metric == "Achieved Occupancy" and unit == "%":
            got["occupancy_pct"] = value
    return _by_name((names[k], v) for k, v in launches.items() if "time_us" in v)


def _by_name(launches) -> list[KernelStat]:
    """Launches summed by kernel name, their rates averaged by launch time."""
    totals: dict[str, KernelStat] = {}
    figures: dict[str, dict[str, _Weighted]] = {}
    for name, got in launches:
        name = clean_name(name)
        stat = totals.setdefault(name, KernelStat(name=name))
        stat.calls += 1
        stat.time_us += got["time_us"]
        avg = figures.setdefault(name, defaultdict(_Weighted))
        for key in ("bandwidth", "dram_pct", "compute_pct", "occupancy_pct"):
            avg[key].add(got.get(key), got["time_us"])
    for name, stat in totals.items():
        for key, w in figures[name].items():
            setattr(stat, key, w.value())
    return sorted(totals.values(), key=lambda s: s.time_us, reverse=True)


def parse_rocprof(out_dir: Path) -> list[KernelStat]:
    """From a rocprofv3 output directory: the kernel trace (or, without it, the stats), with
    the counters where they were collected."""
    out_dir = Path(out_dir)
    counters: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(out_dir.rglob("*counter_collection.csv")):
        for row in _csv_rows(path.read_text(errors="replace"), "Correlation_Id"):
            value = number(row.get("Counter_Value"))
            if value is not None:
                counters[row.get("Kernel_Name", "?")][row.get("Counter_Name", "")].append(value)
    launches = []
    for path in sorted(out_dir.rglob("*kernel_trace.csv")):
        for row in _csv_rows(path.read_text(errors="replace"), "Kind"):
            start, end = number(row.get("Start_Timestamp")), number(row.get("End_Timestamp"))
            if start is None or end is None or end < start:
                continue
            launches.append((row.get("Kernel_Name", "?"), {"time_us": (end - start) / 1e3}))
    if not launches:  # the stats alone: totals per kernel, no rates
        for path in sorted(out_dir.rglob("*kernel_stats.csv")):
            for row in _csv_rows(path.read_text(errors="replace"), "Name"):
                total, calls = number(row.get("TotalDurationNs")), number(row.get("Calls"))
                if total is not None:
                    name = clean_name(row.get("Name", "?"))
                    launches += [(name, {"time_us": total / 1e3 / max(1, int(calls or 1))})] * max(
                        1, int(calls or 1)
                    )
    stats = _by_name(launches)
    by_clean = {clean_name(k): v for k, v in counters.items()}
    for stat in stats:
        seen = by_clean.get(stat.name, {})
        moved = sum(seen.get("FETCH_SIZE", [])) + sum(seen.get("WRITE_SIZE", []))
        if moved and stat.time_us:
            stat.bandwidth = moved * 1024 / (stat.time_us * 1e-6)  # the counters are in KB
        for counter, key in (("OccupancyPercent", "occupancy_pct"), ("VALUBusy", "compute_pct")):
            values = seen.get(counter)
            if values:
                setattr(stat, key, sum(values) / len(values))
    return stats


def parse_torch(text: str) -> tuple[list[KernelStat], float, int]:
    """What `profile_run --torch-profiler` printed: per operator its calls and self time; the
    wall time of the profiled calls and their number. Time outside every operator (Python,
    Triton's interpreter) is a row of its own, so the shares add up to the calls' time."""
    for line in reversed(text.splitlines()):
        if not line.startswith(TORCH_MARK):
            continue
        try:
            data = json.loads(line[len(TORCH_MARK) :])
            rows, wall, calls = data["rows"], float(data["wall_us"]), int(data["calls"])
        except (ValueError, KeyError, TypeError):
            return [], 0.0, 0
        launches = []
        for r in rows if isinstance(rows, list) else []:
            count = max(1, int(number(r.get("calls")) or 1))
            each = (number(r.get("self_us")) or 0.0) / count
            launches += [(str(r.get("name", "?")), {"time_us": each})] * count
        stats = [s for s in _by_name(launches) if s.time_us > 0]
        outside = wall - sum(s.time_us for s in stats)
        if outside > 0:
            stats.append(KernelStat(name=OUTSIDE, calls=calls, time_us=outside))
        return sorted(stats, key=lambda s: s.time_us, reverse=True), wall, calls
    return [], 0.0, 0
