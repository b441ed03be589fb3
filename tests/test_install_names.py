"""The import names kernel-bakeoff installs: one, `kernel_bakeoff`, never the generic `flows`,
`tasks` or `scripts` another distribution may also install (kernel_bakeoff/__init__.py)."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests.import_graph import ROOT, bare_imports

GENERIC = ("flows", "tasks", "scripts")
# What a wheel of the project is built from (setup.py maps the three folders under the prefix).
SOURCES = ("pyproject.toml", "setup.py", "README.md", "kernel_bakeoff", *GENERIC)


def test_no_code_imports_the_folders_by_their_bare_names():
    assert bare_imports() == []


def test_the_environment_the_setup_made_has_no_bare_names(tmp_path):
    # .venv's editable install, from a directory that is not the checkout: the bare names used
    # to resolve to this repository's folders here, whatever else the user had installed.
    code = (
        "import importlib.util as u, kernel_bakeoff.tasks.check.evaluate as e\n"
        f"print([n for n in {GENERIC!r} if u.find_spec(n)], e.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    found, where = out.stdout.split()[:-1], out.stdout.split()[-1]
    assert " ".join(found) == "[]"
    assert Path(where) == ROOT / "tasks" / "check" / "evaluate.py"


def _squatter(at: Path) -> Path:
    """A distribution that installs top-level packages named like our folders."""
    for name in GENERIC:
        (at / name).mkdir(parents=True)
        (at / name / "__init__.py").write_text("WHO = 'squatter'\n")
    (at / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "squatter"\nversion = "1"\n'
        '[tool.setuptools]\npackages = ["flows", "tasks", "scripts"]\n'
    )
    return at


def _pip_install(source: Path, target: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "--target", str(target), str(source)],
        check=True,
        capture_output=True,
    )


def test_installed_beside_a_package_named_scripts_each_keeps_its_own(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        ignore = {"ignore": shutil.ignore_patterns("__pycache__")} if (ROOT / name).is_dir() else {}
        copy(ROOT / name, source / name, **ignore)
    site = tmp_path / "site"
    _pip_install(_squatter(tmp_path / "squatter"), site)
    _pip_install(source, site)

    packages = sorted(p.parent.name for p in site.glob("*/__init__.py"))
    assert packages == ["flows", "kernel_bakeoff", "scripts", "tasks"]
    record = next(site.glob("kernel_bakeoff-*.dist-info")) / "RECORD"
    tops = {line.split("/")[0] for line in record.read_text().splitlines()}
    assert not tops & set(GENERIC)

    code = (
        "import flows, scripts, tasks\n"
        "import kernel_bakeoff.flows.cli, kernel_bakeoff.scripts.check, kernel_bakeoff.tasks.check.evaluate as e\n"
        "print(flows.WHO, scripts.WHO, tasks.WHO, kernel_bakeoff.scripts.check.__file__, e.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    assert words[:3] == ["squatter"] * 3
    assert Path(words[3]) == site / "kernel_bakeoff" / "scripts" / "check.py"
    assert Path(words[4]) == site / "kernel_bakeoff" / "tasks" / "check" / "evaluate.py"
