import torch

from kernel_bakeoff.scripts.formats import detect_format, load_spec, module_for
from kernel_bakeoff.scripts.spec import OpKind

from .conftest import EXAMPLES


def test_softmax_example_loads_as_native_triton():
    spec, src = load_spec(EXAMPLES / "softmax_triton")
    assert detect_format(EXAMPLES / "softmax_triton") == "native"
    assert spec.language == "triton" and spec.kind is OpKind.reduction
    assert [w.name for w in spec.workloads] == ["square", "wide"]
    assert src == EXAMPLES / "softmax_triton"


def test_inputs_follow_workload_dims_and_seed():
    spec, src = load_spec(EXAMPLES / "rmsnorm_torch")
    fmt = module_for(spec.format)
    wl = spec.workloads[0]
    a = fmt.make_inputs(spec, src, wl, 7, "cpu")
    b = fmt.make_inputs(spec, src, wl, 7, "cpu")
    c = fmt.make_inputs(spec, src, wl, 8, "cpu")
    assert [tuple(t.shape) for t in a] == [(256, 1024), (1024,)]
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], c[0])


def test_triton_softmax_matches_reference_on_cpu_interpreter():
    spec, src = load_spec(EXAMPLES / "softmax_triton")
    fmt = module_for(spec.format)
    kernel = fmt.load_callable(spec, src, spec.entry, "cpu")
    ref = fmt.load_callable(spec, src, spec.reference, "cpu")
    (x,) = fmt.make_inputs(spec, src, spec.workloads[1], 3, "cpu")
    torch.testing.assert_close(kernel(x), ref(x))


def test_entry_symbols_are_read_from_the_source_without_running_it():
    from kernel_bakeoff.scripts.program import top_level_names

    source = (
        "import torch.nn as nn\nfrom math import erf\nX, (Y, Z) = 1, (2, 3)\n"
        "try:\n    import triton\nexcept ImportError:\n    triton = None\n"
        "if True:\n    def f():\n        inner = 1\nclass K:\n    attr = 1\n"
    )
    assert top_level_names(source) == {"nn", "erf", "X", "Y", "Z", "triton", "f", "K"}
    assert top_level_names("from torch import *\n") is None
