"""Compiler caches: Discover's candidates compile side by side before any check (precompiling),
and each check then finds its cache full (Inductor's FX graph cache here, on the CPU) and
compiles nothing of its own; the frozen baseline's run beside each check keeps a cache of its
own across checks."""

import shutil
from pathlib import Path

import pytest

from kernel_bakeoff.scripts.check import check, precompile
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.backends import torch_compile
from kernel_bakeoff.tasks.backends.base import BuildContext
from kernel_bakeoff.tasks.check.deadline import Deadline
from kernel_bakeoff.tasks.check.evaluate import Evaluator, precompile_jobs
from kernel_bakeoff.tasks.models.plan import CandidateRef
from kernel_bakeoff.tasks.run.directory import LaneStore
from tests.conftest import EXAMPLES

JOBS_VAR = "BAKEOFF_PRECOMPILE_JOBS"  # a field of tasks/run/settings.py


@pytest.fixture(autouse=True)
def _caches_as_a_run_keeps_them(own_compile_caches):
    """These tests read the per-candidate caches, not the suite's shared one."""


def one_workload_rmsnorm(op: Path) -> Path:
    """examples/rmsnorm_torch copied to `op` with its first workload alone (the freeze still adds
    other sizes, checked for correctness only): these tests are about where the compiled graphs
    go, and each timed workload more is two cold compiles more per compiled program."""
    shutil.copytree(EXAMPLES / "rmsnorm_torch", op)
    spec = (op / "op.toml").read_text()
    first, second = spec.split("[[workloads]]")[1:3]
    (op / "op.toml").write_text(spec.replace("[[workloads]]" + second, "", 1))
    assert "[[workloads]]" + first in (op / "op.toml").read_text()
    return op


# These tests are about where compiled graphs go, not about sizes or the oracle: their freezes
# add no other sizes (each one more cold compile of every compiled program, in the freeze and
# in every check) and skip the oracle probe (tests/test_oracle_probe.py has it).
PLUMBING = {"other_sizes": False, "probe_oracle": False}


@pytest.fixture(scope="module")
def frozen_rmsnorm(tmp_path_factory) -> Path:
    from kernel_bakeoff.scripts.freeze import freeze

    op = one_workload_rmsnorm(tmp_path_factory.mktemp("op") / "rmsnorm_torch")
    return freeze(op, tmp_path_factory.mktemp("task") / "rmsnorm", **PLUMBING)


def compiled_graphs(cache: Path) -> set[str]:
    """The FX graph cache's entries: one per graph Inductor compiled into this cache."""
    root = cache / "inductor" / "fxgraph"
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def compile_ref(task: Path, workdir: Path, mode: str = "torch-compile-default"):
    refs = torch_compile.BACKEND.candidates(BuildContext.load(task, workdir))
    return next(r for r in refs if r.name == mode)


@pytest.mark.slow
def test_a_check_after_a_precompile_compiles_nothing(frozen_rmsnorm, tmp_path):
    ref = compile_ref(frozen_rmsnorm, tmp_path / "work")
    cache = tmp_path / "cache"
    done = precompile(frozen_rmsnorm, Path(ref.path), cache_dir=cache, timeout_s=240)
    assert done.status is None, done.reason
    graphs = compiled_graphs(cache)
    # each timed workload compiles plainly and under the trials' deterministic mode
    assert len(graphs) >= 2, graphs
    verdict = check(frozen_rmsnorm, Path(ref.path), cache_dir=cache, samples=3, timeout_s=240)
    assert verdict.passed, verdict.reason
    assert compiled_graphs(cache) == graphs  # every graph the check needed was there


def test_a_precompile_reports_a_broken_candidate_without_judging(frozen_rmsnorm, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "kernel.py").write_text("raise RuntimeError('no kernel here')\n")
    done = precompile(frozen_rmsnorm, broken, cache_dir=tmp_path / "cache", timeout_s=60)
    assert done.status is Status.COMPILE_ERROR and "no kernel here" in done.reason


def test_precompiling_is_for_c_plus_plus_builds_unless_asked_for_by_name(monkeypatch):
    def refs(*languages):
        return [
            CandidateRef(name=f"c{i}", language=lang, mode="optimize", path="p")
            for i, lang in enumerate(languages)
        ]

    monkeypatch.delenv(JOBS_VAR, raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert precompile_jobs() == 0  # it did not pay on the H200: the checks compile as they go
    assert precompile_jobs(refs("torch", "triton")) == 0
    assert precompile_jobs(refs("cuda", "cuda", "cuda")) == 4  # ~50 s builds: side by side
    assert precompile_jobs(refs("cuda", "torch")) == 0
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert precompile_jobs(refs("hip", "hip")) == 2
    monkeypatch.setenv(JOBS_VAR, "2")
    assert precompile_jobs() == 2
    monkeypatch.setenv(JOBS_VAR, "0")
    assert precompile_jobs(refs("cuda", "cuda")) == 0  # asked for none
    monkeypatch.setenv(JOBS_VAR, "four")
    with pytest.raises(BadInput, match="whole number"):
        precompile_jobs()


@pytest.mark.slow
def test_the_evaluator_precompiles_into_the_cache_its_check_uses(
    prefect_api, frozen_rmsnorm, tmp_path, monkeypatch
):
    monkeypatch.setenv(JOBS_VAR, "2")
    work = tmp_path / "work"
    refs = [
        compile_ref(frozen_rmsnorm, work, mode)
        for mode in ("torch-compile-default", "torch-compile-coordinate-descent")
    ]
    store = LaneStore(tmp_path / "discover")
    lines: list[str] = []
    evaluator = Evaluator(
        FrozenTask.open(frozen_rmsnorm), store, {}, 240, samples=3, log=lines.append
    )
    deadline = Deadline(600)
    evaluator.precompile(refs, deadline)
    done = sorted(line.split(" in ")[0] for line in lines if line.startswith("precompiled"))
    assert done == sorted(f"precompiled {r.name}" for r in refs), lines
    caches = sorted((evaluator.shared / "compile-cache").iterdir())
    assert len(caches) == 2
    before = {c.name: compiled_graphs(c) for c in caches}
    assert all(before.values()), before
    result = evaluator.check(refs[0], deadline)
    assert result.verdict.passed, result.verdict.reason
    assert {c.name: compiled_graphs(c) for c in caches} == before
    lines.clear()
    third = compile_ref(frozen_rmsnorm, work, "torch-compile-max-autotune")
    evaluator.precompile([*refs, third], deadline)  # the one checked is not compiled again
    done = sorted(line.split(" in ")[0] for line in lines if line.startswith("precompiled"))
    assert done == sorted(f"precompiled {r.name}" for r in (refs[1], third)), lines


@pytest.mark.slow
def test_a_search_lane_precompiles_what_it_will_check_into_the_checks_caches(
    prefect_api, frozen_rmsnorm, tmp_path, monkeypatch
):
    from kernel_bakeoff.tasks.engine.search_lane import run_search

    monkeypatch.setenv(JOBS_VAR, "2")  # the torch lane's compiles: asked for by name
    store = LaneStore(tmp_path / "lanes" / "torch")
    lines: list[str] = []
    evaluator = Evaluator(
        FrozenTask.open(frozen_rmsnorm), store, {}, 240, samples=3, log=lines.append
    )
    deadline = Deadline(900)
    graphs: dict[str, set[str]] = {}
    check = evaluator.bind(deadline)

    def checked(ref):  # what each cache held before its check
        graphs[ref.name] = compiled_graphs(evaluator._cache_dir(ref, evaluator._key(ref)))
        return check(ref)

    results = run_search(
        frozen_rmsnorm,
        "torch",
        "optimize",
        tmp_path / "work",
        checked,
        budget_evals=2,
        budget_s=900,
        precompile_fn=evaluator.bind_precompile(deadline),
    )
    assert "precompiling 2 candidate(s), 2 at once" in lines, lines
    assert len(results) == 2 and all(r.verdict.passed for r in results), lines
    for r in results:  # each check found its graphs compiled and compiled nothing new
        cache = evaluator._cache_dir(r.candidate, evaluator._key(r.candidate))
        assert graphs[r.candidate.name] and compiled_graphs(cache) == graphs[r.candidate.name]


@pytest.mark.slow
def test_a_compiled_baseline_is_built_once_for_the_checks_beside_it(tmp_path):
    from kernel_bakeoff.scripts.freeze import freeze

    op = one_workload_rmsnorm(tmp_path / "op")
    kernel = op / "kernel.py"
    kernel.write_text(kernel.read_text() + "\n\nrmsnorm = torch.compile(rmsnorm, dynamic=False)\n")
    task = freeze(op, tmp_path / "task", **PLUMBING)
    candidate = EXAMPLES / "rmsnorm_torch"  # eager: only the baseline compiles
    base_cache = tmp_path / "baseline-cache"
    for n in range(2):
        verdict = check(
            task,
            candidate,
            samples=3,
            timeout_s=240,
            cache_dir=tmp_path / f"candidate-{n}",
            baseline_cache_dir=base_cache,
        )
        assert verdict.passed, verdict.reason
        assert verdict.workloads[0].baseline_timing is not None  # it ran beside the candidate
        if n == 0:
            graphs = compiled_graphs(base_cache)
            assert graphs, "the baseline's run beside the candidate compiled into its cache"
        assert compiled_graphs(base_cache) == graphs  # the second check compiled nothing new


# A baseline that builds into the compilers' cache once and loads from it after, as a load_inline
# CUDA C++ baseline does (its build directory is under XDG_CACHE_HOME); each build is logged there.
BUILT_ONCE = """

import os as _os
from pathlib import Path as _Path

_eager = rmsnorm


def rmsnorm(x, weight, eps=1e-6):
    cache = _os.environ.get("XDG_CACHE_HOME")
    if cache and not (_Path(cache) / "built").exists():
        _Path(cache).mkdir(parents=True, exist_ok=True)
        with open(_Path(cache) / "builds.log", "a") as log:
            log.write(f"{_os.getpid()}\\n")
        (_Path(cache) / "built").write_text("")
    return _eager(x, weight, eps)
"""


@pytest.mark.slow
def test_a_baseline_frozen_into_a_run_is_built_by_its_freeze_alone(prefect_api, tmp_path):
    from kernel_bakeoff.scripts.freeze import freeze, run_baseline_cache
    from kernel_bakeoff.tasks.backends.wrappers import baseline_candidate
    from kernel_bakeoff.tasks.models.plan import CandidateRef

    op = tmp_path / "op"
    shutil.copytree(EXAMPLES / "rmsnorm_torch", op)
    (op / "kernel.py").write_text((op / "kernel.py").read_text() + BUILT_ONCE)
    task = freeze(op, tmp_path / "run" / "task")  # where `bakeoff run` freezes
    builds = run_baseline_cache(task) / "builds.log"
    assert len(builds.read_text().splitlines()) == 1, "the freeze built into the run's cache"

    store = LaneStore(tmp_path / "run" / "discover")
    evaluator = Evaluator(FrozenTask.open(task), store, {}, 240, samples=3)
    deadline = Deadline(600)
    first = baseline_candidate(BuildContext.load(task, store.work_dir))  # Discover's first check
    other = CandidateRef(
        name="eager", language="torch", mode="optimize", path=str(EXAMPLES / "rmsnorm_torch")
    )
    for ref in (first, other):
        result = evaluator.check(ref, deadline)
        assert result.verdict.passed, result.verdict.reason
        assert result.verdict.workloads[0].baseline_timing is not None  # the baseline beside it
    # neither the baseline's runs beside the checks nor the frozen input as a candidate built it
    assert len(builds.read_text().splitlines()) == 1
    caches = {p.name for p in (tmp_path / "run" / "compile-cache").iterdir()}
    assert builds.parent.name in caches and evaluator._key(first) not in caches
