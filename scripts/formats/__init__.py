"""Input formats. Each module loads its layout into an OpSpec and builds inputs and callables.

A format module provides:
  detect(path) -> bool
  load_spec(path, **options) -> (OpSpec, source_dir)   source_dir is copied to baseline_src/
  OPTIONS                                              option names load_spec takes (optional)
  make_inputs(spec, src_dir, workload, seed, device) -> list of tensors (and python scalars)
  load_callable(spec, src_dir, entry, device, candidate=None) -> callable(*inputs)
"""

from __future__ import annotations

from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.formats import native

FORMATS = {"native": native}


def _register_optional() -> None:
    # Formats added by later modules register themselves here without import cycles.
    for name in ("kernelbench", "flashinfer"):
        try:
            FORMATS[name] = __import__(f"kernel_bakeoff.scripts.formats.{name}", fromlist=[name])
        except ModuleNotFoundError as exc:
            if exc.name != f"kernel_bakeoff.scripts.formats.{name}":
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


def load_spec(path: Path, **options):
    """Load any supported input into (OpSpec, source_dir).

    `options` (None values ignored) go to formats that name them in OPTIONS, e.g. a trace set's
    `op` and `solution`; naming one for a format that has no such choice is bad input.
    """
    fmt = detect_format(path)
    module = module_for(fmt)
    given = {k: v for k, v in options.items() if v is not None}
    for key in given:
        if key not in getattr(module, "OPTIONS", ()):
            raise BadInput(str(path), f"--{key} applies only to a flashinfer-bench trace set")
    return module.load_spec(Path(path), **given)
