"""The torch lane's Inductor knobs: what each point passes to torch.compile, and that this torch
takes it (torch.compile checks option names when it wraps, before any compile)."""

import torch

from kernel_bakeoff.tasks.backends import inductor_knobs, torch_compile


def point(**knobs) -> dict:
    return {"mode": "default", "coordinate_descent": False, **inductor_knobs.defaults(), **knobs}


def test_defaults_add_nothing_to_the_three_modes():
    assert torch_compile.compile_kwargs(point()) == {}
    assert torch_compile.compile_kwargs(point(mode="max-autotune")) == {"mode": "max-autotune"}
    assert torch_compile.lane_name(point()) == "torch-compile-default"


def test_a_knob_turns_the_mode_into_options():
    kwargs = torch_compile.compile_kwargs(
        point(mode="max-autotune", **{"triton.persistent_reductions": False})
    )
    assert kwargs == {
        "options": {
            "max_autotune": True,
            "triton.cudagraphs": True,
            "triton.persistent_reductions": False,
        }
    }
    name = torch_compile.lane_name(point(epilogue_fusion=False))
    assert name.startswith("torch-compile-default-knobs-")
    assert name != torch_compile.lane_name(point(split_reductions=False))  # a cache each


def test_gemm_knobs_need_max_autotune():
    assert "max-autotune" in inductor_knobs.invalid(point(max_autotune_gemm_backends="TRITON"))
    ok = point(mode="max-autotune-no-cudagraphs", max_autotune_gemm_backends="TRITON")
    assert inductor_knobs.invalid(ok) is None


def test_every_knob_is_an_option_this_torch_takes():
    assert {p.name for p in inductor_knobs.params()} == set(inductor_knobs.KNOBS)
    for name, values in inductor_knobs.KNOBS.items():
        for value in values[1:]:
            kwargs = torch_compile.compile_kwargs(point(mode="max-autotune", **{name: value}))
            torch.compile(lambda x: x + 1, **kwargs)  # raises on an unknown option name
    assert not inductor_knobs.known("no_such_knob") and not inductor_knobs.known("triton.nope")
