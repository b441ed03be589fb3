"""Inductor's own knobs beyond torch.compile's three modes, as parameters of the torch lane's
space: epilogue fusion, split / persistent / cooperative reductions, multi-kernel (persistent or
not chosen at run time), the max-autotune GEMM backends and search space. Each point is its own
candidate (its wrapper's text differs), so the evaluator keeps a compile cache for each.

Names are `torch._inductor.config` keys; a key this torch lacks is left out of the space rather
than passed to torch.compile (which would refuse it)."""

from __future__ import annotations

from kernel_bakeoff.tasks.search.space import Param

# knob -> values, the first being Inductor's default (a config at all-defaults adds nothing).
KNOBS: dict[str, tuple] = {
    "epilogue_fusion": (True, False),
    "aggressive_fusion": (False, True),
    "split_reductions": (True, False),
    "triton.persistent_reductions": (True, False),
    "triton.cooperative_reductions": (False, True),
    "triton.multi_kernel": (0, 1),
    "max_autotune_gemm_backends": ("ATEN,TRITON,CPP", "TRITON", "ATEN"),
    "max_autotune_gemm_search_space": ("DEFAULT", "EXHAUSTIVE"),
}
AUTOTUNE_ONLY = ("max_autotune_gemm_backends", "max_autotune_gemm_search_space")


def known(name: str) -> bool:
    """Whether this torch's Inductor has the knob."""
    try:
        import torch._inductor.config as config
    except Exception:  # no Inductor: nothing to tune
        return False
    obj = config
    for part in name.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def params() -> list[Param]:
    return [Param(name, values) for name, values in KNOBS.items() if known(name)]


def options(config: dict) -> dict:
    """The knobs of a point that differ from Inductor's defaults, as torch.compile options."""
    return {k: v for k, v in config.items() if k in KNOBS and v != KNOBS[k][0]}


def invalid(config: dict) -> str | None:
    """GEMM backend knobs mean something only under max-autotune."""
    if config.get("mode") == "default" and any(
        options({k: config[k]}) for k in AUTOTUNE_ONLY if k in config
    ):
        return "the max-autotune GEMM knobs do nothing without max-autotune"
    return None


def defaults() -> dict:
    return {name: values[0] for name, values in KNOBS.items() if known(name)}
