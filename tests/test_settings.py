"""The BAKEOFF_* settings (tasks/run/settings.py): every variable the orchestration side names is
a field of the one object or handed to the harness by name on purpose, nothing in tasks/ or
flows/ reads one from the environment behind the object's back, and a bad value is one line."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.run import settings
from kernel_bakeoff.tasks.run.settings import BakeoffSettings, current, enter, forget, load
from tests.conftest import ROOT, cli_in_process

SETTINGS_MODULE = ROOT / "tasks" / "run" / "settings.py"
NAME = re.compile(r"\bBAKEOFF_[A-Z][A-Z0-9_]*[A-Z0-9]\b")

# Named in tasks/ and flows/ but not fields, on purpose: the orchestration side hands these to a
# child by name in its environment, and the child (the harness in scripts/, the forwarder) reads
# them there; the environment is the interface across that process boundary.
HANDED_BY_NAME = {
    "BAKEOFF_DEVICE",  # a lane's device, in its subprocesses' environment (gpu_pool.env_for)
    "BAKEOFF_LANE",  # the lane a deployment's run is for (flows/bakeoff.py deployment_env)
    "BAKEOFF_BRIDGE_URL",  # the Claude Code forwarder's bridge (tasks/agents/claude_code.py)
    "BAKEOFF_BRIDGE_TOKEN",  # and its token
    "BAKEOFF_ISOLATION",  # none: untrusted code unboxed on purpose (scripts/isolation.py)
    "BAKEOFF_SAMPLES",  # timed samples per workload (scripts/check.py)
    "BAKEOFF_CPU_LLC_MIB",  # the CPU cache the harness flushes (scripts/arch.py)
}
# Named but not environment variables at all.
NOT_VARIABLES = {
    "BAKEOFF_TORCH_PROFILE",  # the profiler's output marker (tasks/agents/profile_parse.py)
}
# The model's settings have their own typed object (tasks/agents/settings.py).
AGENT_PREFIX = "BAKEOFF_AGENT_"


def _sources() -> list[Path]:
    return sorted(p for room in ("tasks", "flows") for p in (ROOT / room).rglob("*.py"))


def named_variables() -> dict[str, list[str]]:
    """Each BAKEOFF_ name in the source of tasks/ and flows/ (code, strings and comments), with
    where it is named."""
    found: dict[str, list[str]] = {}
    for path in _sources():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for name in NAME.findall(line):
                found.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{n}")
    return found


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _keys(tree: ast.AST):
    """(key expression, line) of each use of the environment in `tree`: os.environ[k],
    os.environ.get(k) (pop, setdefault), os.getenv(k), k in os.environ."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            yield node.slice, node.lineno
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            on_environ = isinstance(func, ast.Attribute) and _is_environ(func.value)
            getenv = (isinstance(func, ast.Attribute) and func.attr == "getenv") or (
                isinstance(func, ast.Name) and func.id == "getenv"
            )
            if on_environ or getenv:
                yield node.args[0], node.lineno
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            yield node.left, node.lineno


def _value(key: ast.AST, constants: dict[str, str]) -> str | None:
    """The string a key expression names, where it can be read: a literal, a module constant
    (NAME or module.NAME), or an f-string's literal start."""
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    if isinstance(key, ast.Name):
        return constants.get(key.id)
    if isinstance(key, ast.Attribute):
        return constants.get(key.attr)
    if isinstance(key, ast.JoinedStr) and key.values:
        first = key.values[0]
        return first.value if isinstance(first, ast.Constant) else None
    return None


def _constants(trees: list[ast.AST]) -> dict[str, str]:
    """Module-level `NAME = "..."` string constants of every module (the variable's name is
    often held in one: JOBS_VAR, ENV_VAR)."""
    found = {}
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                        found[target.id] = node.value.value
    return found


def environment_reads(sources: dict[str, str]) -> list[str]:
    """`where:line` of each use of os.environ or getenv with a BAKEOFF_ key in `sources`
    (where -> code). Code inside a string (a script written for a child) is not read."""
    trees = {where: ast.parse(code) for where, code in sources.items()}
    constants = _constants(list(trees.values()))
    return sorted(
        f"{where}:{line}"
        for where, tree in trees.items()
        for key, line in _keys(tree)
        if (_value(key, constants) or "").startswith("BAKEOFF_")
    )


def test_every_variable_named_is_a_setting_or_handed_to_a_child_by_name():
    fields = {f"BAKEOFF_{name.upper()}" for name in BakeoffSettings.model_fields}
    named = named_variables()
    stray = {
        name: where
        for name, where in named.items()
        if name not in fields | HANDED_BY_NAME | NOT_VARIABLES and not name.startswith(AGENT_PREFIX)
    }
    # a new one: a field of BakeoffSettings, or on HANDED_BY_NAME with why
    assert stray == {}
    # the lists say what is, not what was: each name on them is still named somewhere
    harness = "\n".join(p.read_text() for p in (ROOT / "scripts").rglob("*.py"))
    gone = {n for n in HANDED_BY_NAME | NOT_VARIABLES if n not in named and n not in harness}
    assert gone == set()


def test_no_environment_read_of_a_bakeoff_variable_outside_the_settings():
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in _sources() if p != SETTINGS_MODULE}
    assert environment_reads(sources) == []


def test_the_static_check_sees_each_form_of_read():
    code = (
        "import os\n"
        "from os import environ, getenv\n"
        'JOBS_VAR = "BAKEOFF_X"\n'
        'a = os.environ.get("BAKEOFF_A")\n'
        "b = os.environ[JOBS_VAR]\n"
        'c = getenv("BAKEOFF_C")\n'
        'd = "BAKEOFF_D" in os.environ\n'
        "e = environ.get(other.JOBS_VAR)\n"
        'f = os.environ.get(f"BAKEOFF_{n}")\n'
        'g = os.environ.get("PATH")\n'
        "h = '''os.environ[\"BAKEOFF_H\"]'''\n"  # a child's script: not read here
    )
    assert environment_reads({"m.py": code}) == [f"m.py:{n}" for n in range(4, 10)]


def test_a_bad_value_is_one_line_naming_the_variable_and_the_value(monkeypatch):
    monkeypatch.setenv("BAKEOFF_CPU_SLOTS", "abc")
    with pytest.raises(BadInput) as raised:
        load()
    said = str(raised.value)
    assert said == "BAKEOFF_CPU_SLOTS: must be a whole number of at least 1, got 'abc'"
    monkeypatch.setenv("BAKEOFF_CPU_SLOTS", "2")
    monkeypatch.setenv("BAKEOFF_REFERENCE_ARCHIVE", "no-callable")
    with pytest.raises(BadInput, match="^BAKEOFF_REFERENCE_ARCHIVE: must be module:callable, got"):
        load()


def test_the_command_says_a_bad_value_in_one_line_before_it_runs(monkeypatch, capfd, tmp_path):
    monkeypatch.setenv("BAKEOFF_RETIME_TRIES", "-1")
    proc = cli_in_process(capfd, "history", "rmsnorm", "--runs-root", str(tmp_path / "runs"))
    assert proc.returncode == 2
    assert proc.stderr == (
        "bakeoff history: error: BAKEOFF_RETIME_TRIES: must be a whole number of at least 0, "
        "got '-1'\n"
    )
    assert not (tmp_path / "runs").exists()


def test_deep_code_reads_what_the_entry_point_read_else_the_environment(monkeypatch):
    monkeypatch.setenv("BAKEOFF_HOST", "one")
    assert current().host == "one"  # no entry point: the environment, now
    monkeypatch.setenv("BAKEOFF_HOST", "two")
    assert current().host == "two"
    assert enter().host == "two"
    monkeypatch.setenv("BAKEOFF_HOST", "three")
    assert current().host == "two"  # what the entry point read, for the rest of its run
    forget()
    assert current().host == "three"


def test_defaults_and_an_empty_variable(monkeypatch):
    for name in BakeoffSettings.model_fields:
        monkeypatch.delenv(f"BAKEOFF_{name.upper()}", raising=False)
    monkeypatch.setenv("BAKEOFF_PRECOMPILE_JOBS", "")  # empty: as if unset
    got = load()
    assert got.cpu_slots is None and got.precompile_jobs is None and got.retime_tries == 2
    assert got.lock_dir.name.startswith("kernel-bakeoff-locks-") and got.host
    assert got.interpreted_templates is False and got.history_url is None


def test_a_history_url_with_a_password_is_not_shown(monkeypatch):
    monkeypatch.setenv("BAKEOFF_HISTORY_URL", "postgresql://bakeoff:hunter2@db/bakeoff")
    got = load()
    assert "hunter2" not in repr(got) and "hunter2" not in str(got)
    assert got.history_url.get_secret_value().endswith("hunter2@db/bakeoff")


def test_importing_the_settings_reads_nothing():
    # a bad value in the environment: an import that read it would fail
    code = "import kernel_bakeoff.tasks.run.settings as s; assert s._entered is None; print('ok')"
    env = {"BAKEOFF_CPU_SLOTS": "abc", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.stdout == "ok\n", done.stderr
    assert settings._entered is None  # and conftest left none from another test
