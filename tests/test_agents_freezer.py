"""oracle_freezer: the scripted model reads a kernel directory that has no spec and answers with
one; an answer the spec loader refuses goes back once with its error; the written op.toml then
freezes as usual, and the input directory is left as it was."""

from __future__ import annotations

import shutil

from scripts.formats import load_spec
from tasks.agents.freezer import write_spec
from tests.agent_env import held_key, settings_for
from tests.conftest import EXAMPLES
from tests.scripted_api import ScriptedAPI, reply, tool

SPEC = {
    "name": "softmax",
    "kind": "reduction",
    "language": "triton",
    "entry": "kernel.py:softmax",
    "inputs": [{"name": "x", "shape": ["M", "N"], "dtype": "float32", "scale": 3.0}],
    "workloads": [{"name": "small", "dims": {"M": 8, "N": 100}}],
    "flops": "5*M*N",
}


def test_oracle_freezer_writes_a_spec_that_loads(tmp_path):
    kernel_dir = tmp_path / "specless"
    shutil.copytree(EXAMPLES / "softmax_triton", kernel_dir)
    (kernel_dir / "op.toml").unlink()
    before = sorted(p.name for p in kernel_dir.iterdir())
    steps = [
        reply(tool("list_files", path=".")),
        reply(tool("read_file", path="kernel.py")),
        reply(tool("write_file", path="op.toml", content="name = 'x'")),
        reply(tool("submit", **(SPEC | {"entry": "kernel.py:soft_max"}))),  # no such function
        reply(tool("submit", **SPEC)),
    ]
    with held_key(), ScriptedAPI(steps) as api:
        out = write_spec(kernel_dir, tmp_path / "with-spec", tmp_path / "work", settings_for(api))
        results = api.tool_results()
    assert "kernel.py" in results[0]["content"] and "def softmax" in results[1]["content"]
    assert results[2]["is_error"] and "writes nothing" in results[2]["content"]
    assert results[3]["is_error"] and "defines no 'soft_max'" in results[3]["content"]
    spec, src = load_spec(out)
    assert spec.entry == "kernel.py:softmax" and spec.workloads[0].dims == {"M": 8, "N": 100}
    assert sorted(p.name for p in kernel_dir.iterdir()) == before  # the input is untouched
    from functools import partial

    from scripts.freeze import freeze, measure_baseline

    task = freeze(out, tmp_path / "task", partial(measure_baseline, samples=5))
    assert (task / "MANIFEST.json").is_file() and (task / "baseline_src" / "op.toml").is_file()
