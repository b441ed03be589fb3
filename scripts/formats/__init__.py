"""Input formats. Each module loads its layout into an OpSpec and builds inputs and callables.

A format module provides:
  detect(path) -> bool
  load_spec(path) -> (OpSpec, source_dir)       source_dir is copied to baseline_src/
  make_inputs(spec, src_dir, workload, seed, device) -> list of tensors
  load_callable(spec, src_dir, entry, device, candidate=None) -> callable(*inputs)
"""

from __future__ import annotations

from pathlib import Path

from scripts.errors import BadInput
from scripts.formats import native

FORMATS = {"native": native}


def _register_optional() -> None:
    # Formats added by later modules register themselves here without import cycles.
    for name in ("kernelbench", "flashinfer"):
        try:
            FORMATS[name] = __import__(f"scripts.formats.{name}", fromlist=[name])
        except ModuleNotFoundError as exc:
            if exc.name != f"scripts.formats.{name}":
                raise


_register_optional()


def module_for(fmt: str):
    try:
        return FORMATS[fmt]
    except KeyError:
        raise BadInput("format", f"unknown format {fmt!r}") from None


def detect_format(path: Path) -> str:
    path = Path(path)
    if not path.exists():
        raise BadInput(str(path), "no such file or directory")
    for name, mod in FORMATS.items():
        if mod.detect(path):
            return name
    raise BadInput(
        str(path),
        "not a kernel this tool can read: expected an op directory with op.toml, "
        "a KernelBench problem .py, or a flashinfer-bench trace set",
    )


def load_spec(path: Path):
    """Load any supported input into (OpSpec, source_dir)."""
    return module_for(detect_format(path)).load_spec(Path(path))
