"""Generated candidates for torch and Triton: what they contain, and that they run."""

import textwrap
from pathlib import Path

import torch

from kernel_bakeoff.scripts import arch
from kernel_bakeoff.scripts.program import import_file
from kernel_bakeoff.scripts.spec import OpSpec, Workload
from kernel_bakeoff.tasks.backends import torch_compile, triton_surface, wrappers
from kernel_bakeoff.tasks.backends.base import BuildContext, write_candidate
from kernel_bakeoff.tasks.backends.triton_tune import BACKEND as TRITON
from kernel_bakeoff.tasks.backends.wrappers import baseline_candidate


def test_compile_candidates_wrap_the_torch_reference(frozen_softmax, tmp_path):
    ctx = BuildContext.load(frozen_softmax, tmp_path)
    refs = torch_compile.BACKEND.candidates(ctx)
    assert [r.name for r in refs] == list(torch_compile.DISCOVER_MODES)
    for ref in refs:
        assert ref.params["source"] == "reference.py:softmax"
        assert (Path(ref.path) / "frozen" / "reference.py").is_file()
    fn = import_file(Path(refs[0].path) / "kernel.py", "test").softmax
    x = torch.randn(8, 100)
    torch.testing.assert_close(fn(x), torch.softmax(x, -1))


def test_compile_space_maps_to_torch_compile_arguments():
    assert torch_compile.compile_kwargs({"mode": "default", "coordinate_descent": False}) == {}
    assert torch_compile.compile_kwargs({"mode": "max-autotune", "coordinate_descent": False}) == {
        "mode": "max-autotune"
    }
    cd = torch_compile.compile_kwargs({"mode": "max-autotune", "coordinate_descent": True})
    assert cd == {
        "options": {
            "max_autotune": True,
            "triton.cudagraphs": True,
            "coordinate_descent_tuning": True,
        }
    }


def kernelbench_ctx(tmp_path) -> BuildContext:
    src = tmp_path / "src"
    src.mkdir()
    (src / "prob.py").write_text(
        textwrap.dedent(
            """
            import torch
            import torch.nn as nn

            class Model(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.lin = nn.Linear(n, n)

                def forward(self, x):
                    return torch.relu(self.lin(x))

            def get_inputs():
                return [torch.randn(4, 16)]

            def get_init_inputs():
                return [16]
            """
        )
    )
    spec = OpSpec(
        name="prob",
        language="torch",
        format="kernelbench",
        entry="prob.py:Model",
        workloads=[Workload(name="default")],
    )
    return BuildContext(tmp_path, spec, src, tmp_path / "work", arch.named("cpu"), "0" * 64)


def test_class_entries_become_ModelNew_with_equal_weights(tmp_path):
    ctx = kernelbench_ctx(tmp_path)
    text = wrappers.compiled(ctx, ctx.spec.entry, {}, "test")
    cand = import_file(write_candidate(ctx, "compiled", text) / "prob.py", "test")
    frozen = import_file(ctx.baseline_src / "prob.py", "test")
    torch.manual_seed(42)
    ref = frozen.Model(16)
    torch.manual_seed(42)
    new = cand.ModelNew(16)
    x = torch.randn(4, 16)
    torch.testing.assert_close(new(x), ref(x))
    assert cand.get_inputs()[0].shape == (4, 16)


def test_baseline_candidate_reexports_the_entry(frozen_softmax, tmp_path):
    ctx = BuildContext.load(frozen_softmax, tmp_path)
    ref = baseline_candidate(ctx)
    assert ref.mode == "baseline" and ref.language == "triton"
    fn = import_file(Path(ref.path) / "kernel.py", "test").softmax
    x = torch.randn(4, 64)
    torch.testing.assert_close(fn(x), torch.softmax(x, -1))


def test_softmax_surface_and_space(frozen_softmax, tmp_path):
    ctx = BuildContext.load(frozen_softmax, tmp_path)
    surface = triton_surface.discover(ctx.baseline_src, ctx.spec.entry)
    assert surface.kwargs == {"BLOCK": None, "num_warps": 4}
    assert [k.name for k in surface.kernels] == ["_softmax_row"]
    assert surface.kernels[0].constexprs == ["BLOCK"] and not surface.has_dot
    cpu_space, defaults = triton_surface.space(surface, arch.named("cpu"))
    assert cpu_space.names == ["BLOCK"]  # the interpreter ignores launch options
    assert defaults[0] == {"BLOCK": None}
    h100, _ = triton_surface.space(surface, arch.named("sm_90"))
    assert dict(zip(h100.names, (p.values for p in h100.params)))["num_warps"] == (1, 2, 4, 8, 16)
    mi300, _ = triton_surface.space(surface, arch.named("gfx942"))
    # no tl.dot: waves_per_eu is tuned, matrix_instr_nonkdim and kpack are not legal to try
    assert "_softmax_row.waves_per_eu" in mi300.names
    assert not any("nonkdim" in n or "kpack" in n for n in mi300.names)


AUTOTUNED = """
import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)],
    key=["n"],
)
@triton.jit
def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x):
    y = torch.empty_like(x)
    _scale[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
    return y
"""


def test_autotune_configs_are_read_and_pinned(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.py").write_text(AUTOTUNED)
    surface = triton_surface.discover(src, "k.py:scale")
    (kernel,) = surface.kernels
    assert kernel.configs == [
        {"BLOCK": 64, "num_warps": 2, "num_stages": 3},
        {"BLOCK": 128, "num_warps": 4, "num_stages": 3},
    ]
    space, defaults = triton_surface.space(surface, arch.named("gfx950"))
    assert space.names == [
        "_scale:BLOCK",
        "_scale:num_stages",
        "_scale:num_warps",
        "_scale:waves_per_eu",
    ]
    assert len(defaults) == 3 and defaults[1]["_scale:BLOCK"] == 64
    half = {**defaults[0], "_scale:BLOCK": 64}
    assert "every key or none" in space.invalid(half)
    amd_only = {**defaults[0], "_scale:waves_per_eu": 2}
    assert "needs a pinned config" in space.invalid(amd_only)
    spec = OpSpec(name="s", language="triton", entry="k.py:scale", workloads=[Workload(name="w")])
    ctx = BuildContext(tmp_path, spec, src, tmp_path / "work", arch.named("cpu"), "0" * 64)
    kwargs, launch, pins = triton_surface.split(defaults[2])
    text = wrappers.triton_config(ctx, spec.entry, kwargs, launch, pins, "test")
    module = import_file(write_candidate(ctx, "pinned", text) / "k.py", "test")
    x = torch.arange(300, dtype=torch.float32)
    torch.testing.assert_close(module.scale(x), x * 2)
    (config,) = module._src._scale.configs
    assert config.kwargs == {"BLOCK": 128} and config.num_warps == 4


def test_forced_launch_options_reach_the_kernel_launch(frozen_softmax, tmp_path):
    ctx = BuildContext.load(frozen_softmax, tmp_path)
    text = wrappers.triton_config(
        ctx, ctx.spec.entry, {"BLOCK": 1024}, {"_softmax_row": {"num_stages": 2}}, {}, "test"
    )
    module = import_file(write_candidate(ctx, "forced", text) / "kernel.py", "test")
    seen = []
    kernel = module._src._softmax_row._kernel

    class Spy:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                seen.append(kwargs)
                return kernel[grid](*args, **kwargs)

            return launch

    module._src._softmax_row._kernel = Spy()
    x = torch.randn(3, 1000)
    torch.testing.assert_close(module.softmax(x), torch.softmax(x, -1))
    assert seen == [{"BLOCK": 1024, "num_warps": 4, "num_stages": 2}]


def test_triton_tunable_builds_runnable_candidates(frozen_softmax, tmp_path):
    ctx = BuildContext.load(frozen_softmax, tmp_path)
    tunable = TRITON.tunable(ctx)
    ref = tunable.build({"BLOCK": 2048})
    assert ref.params == {"BLOCK": 2048} and ref.language == "triton"
    fn = import_file(Path(ref.path) / "kernel.py", "test").softmax
    x = torch.randn(2, 1000)
    torch.testing.assert_close(fn(x), torch.softmax(x, -1))
