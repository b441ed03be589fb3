"""What the task sheet states that can be measured: the device, each workload's roofline, the
tolerance as numbers, and the hardware facts of the lane's knowledge cards.

The roofline figures are the report's own (`tasks/check/roofline.py`: the same bytes, flops and rates),
so the model reads the floor the report will later judge its candidate against. Everything here
comes from the frozen task (spec, baseline, fingerprint) and the curated cards: nothing a model
wrote reaches the sheet.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from kernel_bakeoff.scripts.baseline import FrozenBaseline
from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.agents.knowledge import FAMILIES, front_matter
from kernel_bakeoff.tasks.check.roofline import DeviceRates, device_rates, floors

FACTS_PER_SHEET = 14  # card bullets with figures; the cards themselves are in knowledge/


def shape_of(shape: list, dims: dict[str, int]) -> list[int | str]:
    """An input's shape at a workload: dimension names replaced by their values."""
    return [d if isinstance(d, int) else dims.get(d, d) for d in shape]


def device_facts(task_dir: Path) -> tuple[dict, DeviceRates]:
    """The device the frozen baseline was timed on, with the peak rates the report uses."""
    fp = json.loads((Path(task_dir) / "fingerprint.json").read_text())
    rates = device_rates(fp)
    facts = {
        "name": fp.get("device_name") or fp.get("arch") or "cpu",
        "arch": rates.arch,
        "bandwidth_gbs": rates.bandwidth / 1e9,
        "peak_tflops": rates.peak_flops / 1e12,
        "source": rates.source,
        "note": rates.note,
    }
    return facts, rates


def workload_rows(spec: OpSpec, baseline: FrozenBaseline, rates: DeviceRates) -> list[dict]:
    """Per workload: input shapes and dtypes, the frozen baseline's time, bytes and flops, the
    floor on this device and how many times the floor the baseline takes."""
    timed = {f.workload: f for f in floors(spec, rates)}
    rows = []
    for w in spec.workloads:
        base = baseline.workloads.get(w.name)
        row = {
            "name": w.name,
            "timed": w.timed,
            "inputs": [
                f"{i.name} {'x'.join(map(str, shape_of(i.shape, w.dims)))} {i.dtype}"
                for i in spec.inputs
            ],
            "baseline_ms": base.median_ms if base and w.timed else None,
            "bytes": None,
            "bytes_rule": None,
            "flops": None,
            "floor_ms": None,
            "bound": None,
            "times_floor": None,
        }
        f = timed.get(w.name)
        if f is not None:
            floor_ms = max(f.memory_floor_ms or 0.0, f.compute_floor_ms or 0.0) or None
            bound = "memory" if (f.memory_floor_ms or 0) >= (f.compute_floor_ms or 0) else "compute"
            base_ms = row["baseline_ms"]
            row |= {
                "bytes": f.bytes,
                "bytes_rule": f.bytes_rule,
                "flops": f.flops,
                "floor_ms": floor_ms,
                "bound": bound if floor_ms else None,
                "times_floor": base_ms / floor_ms if floor_ms and base_ms else None,
            }
        rows.append(row)
    return rows


def tolerances(spec: OpSpec) -> dict[str, float]:
    """The bound each output dtype is held to (norm-relative error), as numbers."""
    dtypes = sorted({i.dtype for i in spec.inputs} | set(spec.tolerance))
    return {d: spec.tolerance_for(d) for d in dtypes if spec.tolerance_for(d) > 0}


def hardware_facts(cards: list[Path], arch: str, limit: int = FACTS_PER_SHEET) -> list[str]:
    """Bullets of the lane's cards that state a figure (a size, a rate, a count), cards written
    for this architecture first: the facts a kernel engineer reads before a line of code."""

    def arch_first(card: Path) -> int:
        archs = front_matter(card).get("archs", ["any"])
        return 0 if arch in archs or FAMILIES.get(arch, "-") in archs else 1

    facts = []
    for card in sorted(cards, key=arch_first):
        for line in card.read_text(errors="replace").splitlines():
            text = line.strip()
            if text.startswith("- ") and re.search(r"\d", text):
                facts.append(f"{text[2:]} ({card.name})")
    return facts[:limit]


def measured_facts(
    task_dir: Path, spec: OpSpec, baseline: FrozenBaseline, cards: list[Path]
) -> dict:
    """The sheet's measurable part (templates/agent_task.md.j2 renders it)."""
    device, rates = device_facts(task_dir)
    return {
        "device": device,
        "workload_rows": workload_rows(spec, baseline, rates),
        "tolerances": tolerances(spec),
        "hardware_facts": hardware_facts(cards, device["arch"]),
    }
