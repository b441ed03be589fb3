"""jinja2 rendering of templates/: the lane sheet, the bake-off report, the nightly summary."""

from __future__ import annotations

from pathlib import Path

import jinja2

from kernel_bakeoff.tasks.discover.table import floor_ms

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def _speedup(value) -> str:
    return "-" if value is None else f"{value:.3f}x"


def _ms(value) -> str:
    return "-" if value is None else f"{value:.4g}"


_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
)


def _floor_ms(row) -> float | None:

    return floor_ms(row)


_env.filters.update(speedup=_speedup, ms=_ms, floor_ms=_floor_ms)


def render(name: str, **context) -> str:
    return _env.get_template(name).render(**context)
