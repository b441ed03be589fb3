"""benchmarks/coverage.py on three tiny KernelBench-format problems (tests/data/kb_coverage):
traced, matched and checked through the product's freeze, trace and harness."""

import ast
import json
import os

import pytest

from benchmarks import coverage
from tests.conftest import ROOT

KB = ROOT / "tests" / "data" / "kb_coverage"


@pytest.fixture(autouse=True)
def environment_restored():
    """coverage.main sets what a survey needs in os.environ (the interpreter, templates on the
    CPU, the samples); left set, it changed later tests of the same worker (test_libraries)."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_shrink_makes_module_sizes_small_and_keeps_their_residue():
    src = "batch_size = 4096\nN = 2048 * 2 + 1\nd = 1 << 20\nk = 3\nname = 'x'\ndef f():\n    big = 4096\n"
    tree = ast.parse(coverage.shrink(src))
    values = {n.targets[0].id: n.value.value for n in tree.body if isinstance(n, ast.Assign)}
    assert values == {"batch_size": 32, "N": 33, "d": 32, "k": 3, "name": "x"}
    assert "big = 4096" in coverage.shrink(src)  # inside a function: not a module size


def test_coverage_of_three_problems(tmp_path, capsys):
    out, rows = tmp_path / "coverage.md", tmp_path / "rows.json"
    assert (
        coverage.main([str(KB), "--levels", "1", "--check", "--out", str(out), "--json", str(rows)])
        == 0
    )
    import json

    by_name = {r["problem"]: r for r in json.loads(rows.read_text())}
    assert by_name["1_Softmax"]["matches"] == ["softmax"]
    assert by_name["1_Softmax"]["passed"] and by_name["3_Sum_over_dim"]["passed"]
    assert by_name["1_Softmax"]["candidates"][0]["kernels"]  # the template ran
    none = by_name["2_Cumprod"]  # no template: the row says why
    assert none["matches"] == [] and "cumprod" in none["notes"][0] and not none["candidates"]
    text = out.read_text()
    assert "all: 2 of 3 matched, 2 with a candidate, 2 with one that passes (67%)" in text
    assert "| 1 | 2_Cumprod | " in text


def test_a_folder_without_levels_is_one_line_and_exit_2(tmp_path, capsys):
    assert coverage.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no level1/ folder" in err


@pytest.mark.parametrize("value", [17, 32, 33, 64, 1000, 4095])
def test_small_is_small(value):
    assert coverage.small(value) <= 63 and coverage.small(value) % 32 == value % 32


def test_rows_of_a_split_survey_render_as_one(tmp_path):
    rows = [
        {"level": 2, "problem": "10_b", "calls": ["relu"], "matches": ["elementwise+relu"],
         "notes": [], "candidates": [{"name": "t-x", "status": "PASSED"}], "libraries": [],
         "passed": ["t-x"]},
        {"level": 1, "problem": "9_a", "calls": ["conv2d"], "matches": [], "notes": ["why"],
         "candidates": [], "libraries": [], "passed": []},
    ]  # fmt: skip
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.md"
    a.write_text(json.dumps(rows[:1]))
    b.write_text(json.dumps(rows[1:]))
    assert coverage.main(["--rows", str(a), str(b), "--out", str(out)]) == 0
    text = out.read_text()
    assert "- all: 1 of 2 matched, 1 with a candidate, 1 with one that passes (50%)" in text
    assert text.index("| 1 | 9_a |") < text.index("| 2 | 10_b |")
    assert coverage.main(["--rows", str(tmp_path / "missing.json")]) == 2
