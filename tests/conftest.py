import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Prefect's embedded server gets 20 s to start by default; on a loaded two-core machine a
# `bakeoff run` subprocess was seen to die waiting for it before the run began.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def _remove(path: Path) -> None:
    """A tree with frozen tasks in it: they are read-only."""
    from kernel_bakeoff.scripts.check import _remove as remove

    if path.exists():
        remove(path)


def _own_dir(var: str, prefix: str) -> None:
    """A throwaway directory in `var` for this test process, unless the user set one. Each
    pytest-xdist worker gets its own: workers inherit the controller's environment, and two
    processes sharing one Prefect database or one set of device leases wait on each other."""
    mark = f"_BAKEOFF_TEST_OWNS_{var}"
    if var in os.environ and mark not in os.environ:
        return  # the user's
    if os.environ.get(mark) == str(os.getpid()):
        return
    os.environ[var] = tempfile.mkdtemp(prefix=prefix)
    os.environ[mark] = str(os.getpid())
    atexit.register(shutil.rmtree, os.environ[var], ignore_errors=True)


# Prefect reads PREFECT_HOME when it is imported: a throwaway one for the session.
_own_dir("PREFECT_HOME", "bakeoff-prefect-home-")
# Device leases of this session's lanes, apart from any other session's or user's on the host
# (the default, /tmp/kernel-bakeoff-locks-UID, is shared: one checkout's tests waited on another's).
_own_dir("BAKEOFF_LOCK_DIR", "bakeoff-test-locks-")
# One compile cache for every check of the session, its workers included (inherited from the
# controller): the bake-offs compile the same torch.compile graphs of the same examples, cold
# each time in a run's per-candidate caches (scripts/judge.py, child_env). Inductor and Triton
# write their cache entries atomically, so processes may share it.
if "BAKEOFF_TEST_COMPILE_CACHE" not in os.environ:
    os.environ["BAKEOFF_TEST_COMPILE_CACHE"] = tempfile.mkdtemp(prefix="bakeoff-test-compile-")
    atexit.register(shutil.rmtree, os.environ["BAKEOFF_TEST_COMPILE_CACHE"], ignore_errors=True)
# Inductor on the CPU checks each vector ISA the CPU lists by compiling a test program into
# its cache, so every fresh cache (each precompile test's candidate, each freeze's reference
# run) paid a few C++ builds before its first kernel: test_precompile's compiled-baseline
# test ran 121 compiler processes (34.7 CPU-s) with the checks, 54 (18.6 CPU-s) without. The
# suite's hosts build those ISAs (CI installs g++); the product keeps Inductor's check.
os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")
# Frozen tasks shared by the whole session (tests/agent_kernels.py: frozen_tiny_softmax).
if "BAKEOFF_TEST_FROZEN_DIR" not in os.environ:
    os.environ["BAKEOFF_TEST_FROZEN_DIR"] = tempfile.mkdtemp(prefix="bakeoff-test-frozen-")
    atexit.register(lambda path: _remove(Path(path)), os.environ["BAKEOFF_TEST_FROZEN_DIR"])
# Timed samples per workload of every check and freeze that names none (scripts/check.py): 5,
# the least the reviewer trusts, not the product's 30. The suite's checks are about verdicts,
# statuses and plumbing, never about a figure (tests/controlled_timings.py sets the ones a
# test needs), and each sample is a cache flush and a call on the host, for the candidate and
# the baseline beside it: an eager check's harness phases took 1.66 s at 10, 1.2 s at 5 here.
os.environ.setdefault("BAKEOFF_SAMPLES", "5")
# The cache the harness flushes before each timed call on the host (scripts/arch.py): 1 MiB,
# not the 64 MiB of a server CPU. Writing 128 MiB before each of a check's samples, in the
# candidate's process and the baseline's beside it, was the largest part of their time
# (docs/testing.md, "The harness's own seconds"). The suite times nothing it asserts.
os.environ.setdefault("BAKEOFF_CPU_LLC_MIB", "1")
# The warm-up's fixed count only, not up to 2 s more per timed workload until the calls settle
# (scripts/settle.py, its rule tested in tests/test_settle.py): on a busy CI host they may not.
os.environ.setdefault("BAKEOFF_SETTLE_S", "0")
# A noisy frozen baseline is said, not frozen again (tasks/check/quiet_baseline.py): the suite's
# baselines are five samples on a shared host, often noisy, and each re-timing is a freeze.
# tests/test_quiet_baseline.py sets its own.
os.environ.setdefault("BAKEOFF_RETIME_TRIES", "0")
try:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
except ImportError:  # pragma: no cover
    pass


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: dict | None = None,
    module: str = "kernel_bakeoff.flows.cli",
) -> subprocess.CompletedProcess:
    """Run the real `bakeoff` command line in a subprocess (`module`: a test's stand-in that
    runs it, e.g. tests.controlled_timings)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd or ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def cli_in_process(capfd, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`bakeoff ARGS` by calling flows.cli.main in this process: the command's own parser,
    checks and refusals, without an interpreter start and its imports (~3 s a case here) for
    each of the many bad-input cases. `capfd` reads file descriptors 1 and 2, so a child the
    command starts (the box that loads a spec) is heard as it would be from the command. Its
    working directory, environment and settings are restored after. Tests of the process itself
    (its exit on Ctrl-C, --debug tracebacks, a real `bakeoff run`) keep run_cli."""
    from kernel_bakeoff.flows import cli
    from kernel_bakeoff.tasks.run.settings import forget

    capfd.readouterr()
    env, here = dict(os.environ), os.getcwd()
    os.chdir(cwd or ROOT)
    try:
        code = cli.main(list(args))
    except SystemExit as exc:  # argparse: exit 2 on a usage error, 0 after --help
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(env)
        forget()  # and the settings the command read from it
    said = capfd.readouterr()
    return subprocess.CompletedProcess(["bakeoff", *args], code, said.out, said.err)


@pytest.fixture(autouse=True)
def settings_read_per_test():
    """The BAKEOFF_* settings an entry point (a flow, the command's main) read in one test are
    not the next test's: after each, deep code reads the environment again (tasks/run/settings.py,
    the rule)."""
    from kernel_bakeoff.tasks.run.settings import (
        forget,  # lazily, as this module's other project imports
    )

    yield
    forget()


@pytest.fixture(scope="session")
def frozen_rmsnorm(tmp_path_factory) -> Path:
    from kernel_bakeoff.scripts.freeze import freeze

    return freeze(EXAMPLES / "rmsnorm_torch", tmp_path_factory.mktemp("tasks") / "rmsnorm")


def seed_frozen(
    frozen: Path, runs: Path, mode: str = "optimize", target_language: str | None = None
) -> Path:
    """`runs` with the run directory of a rmsnorm_torch run in `mode` holding `frozen` (the
    session's freeze of it, `frozen_rmsnorm`): a run's freeze keeps a task already frozen from
    the same input, as a resumed run's does (tasks/check/freezing.py), so the run skips a freeze
    of its own (~6 s under the suite's load). For tests whose subject is not the freeze."""
    from kernel_bakeoff.tasks.run.directory import default_run_dir

    run_dir = default_run_dir(EXAMPLES / "rmsnorm_torch", runs, mode, target_language)
    shutil.copytree(frozen, run_dir / "task", symlinks=True)
    return run_dir


@pytest.fixture(scope="session")
def frozen_softmax(tmp_path_factory) -> Path:
    """examples/softmax_triton frozen once a session (a worker's), for Discover, the search
    lanes and the backends' tests; they read it and write their work elsewhere."""
    from kernel_bakeoff.scripts.freeze import freeze

    return freeze(EXAMPLES / "softmax_triton", tmp_path_factory.mktemp("tasks") / "softmax")


@pytest.fixture
def own_compile_caches(monkeypatch):
    """The harness's per-candidate compile caches as a run has them, for tests of those caches."""
    monkeypatch.delenv("BAKEOFF_TEST_COMPILE_CACHE", raising=False)


@pytest.fixture
def forked(monkeypatch) -> list[str]:
    """The modules this test's warm servers forked (scripts/forkserver.py), in order."""
    from kernel_bakeoff.scripts import forkserver

    modules: list[str] = []
    run = forkserver.Server.run
    monkeypatch.setattr(
        forkserver.Server,
        "run",
        lambda self, module, *a, **k: modules.append(module) or run(self, module, *a, **k),
    )
    return modules


@pytest.fixture(scope="session")
def prefect_api():
    """A temporary Prefect server (own SQLite database) for flows run in the test process."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield


@pytest.fixture
def prefect_api_env(prefect_api) -> dict[str, str]:
    """The environment that points a `bakeoff run` subprocess at this worker's Prefect server
    (prefect_api), as a user with a server configured runs it, instead of the temporary server
    it starts otherwise (a SQLite database made afresh: ~8 CPU-s of a run here). The tests of
    that start (test_server_warmup, the Ctrl-C test's first run in test_flow_cli) leave it out."""
    from prefect.settings import PREFECT_API_URL

    return {"PREFECT_API_URL": PREFECT_API_URL.value()}


@pytest.fixture(scope="session")
def campaign_run(prefect_api, tmp_path_factory):
    """A real two-round campaign of a wasteful rmsnorm (one lane a round, the lean kernel of
    examples/ checked by the harness): its directory and the report it returned. Shared by the
    campaign test and the HTML report test, so CI pays for these bake-offs once. The checks'
    timings are the test's (tests/controlled_timings.py): the lean kernel beyond its bar,
    everything else 1.0x, so round 1's best is the lean kernel on any load."""
    import shutil

    from kernel_bakeoff.flows.campaign import campaign
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    from .campaign_doubles import CAMPAIGN, WASTEFUL
    from .controlled_timings import control_checks

    problem = tmp_path_factory.mktemp("problem") / "rmsnorm_torch"
    shutil.copytree(EXAMPLES / "rmsnorm_torch", problem)
    (problem / "kernel.py").write_text(WASTEFUL)
    root = tmp_path_factory.mktemp("campaign") / "run"
    old = os.environ.get("BAKEOFF_LOCK_DIR")
    os.environ["BAKEOFF_LOCK_DIR"] = str(root.parent / "locks")
    patch = pytest.MonkeyPatch()
    try:
        control_checks(patch, wins="^lean$")
        final = campaign(
            BakeoffRequest(
                kernel_path=str(problem),
                rounds=2,
                run_dir=str(root),
                mode="optimize",
                budget=1,
                samples=5,
                agents=CAMPAIGN,
            )
        )
    finally:
        patch.undo()
        if old is None:
            del os.environ["BAKEOFF_LOCK_DIR"]
        else:
            os.environ["BAKEOFF_LOCK_DIR"] = old
    return root, final


# Modules that read one costly session fixture run on one xdist worker, so it is made once.
ONE_WORKER = {
    "test_campaign.py": "campaign_run",
    "test_report_html.py": "campaign_run",
    "test_discover.py": "frozen_softmax",
    "test_search_lane.py": "frozen_softmax",
    "test_backend_torch_triton.py": "frozen_softmax",
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """A module's tests on one worker (test.sh's --dist loadscope), the modules of ONE_WORKER's
    groups together, and in collection order: pytest_collection_modifyitems puts the slow first,
    so the last module to finish is a short one, not test_service started by an idle worker."""
    from xdist.scheduler import LoadScopeScheduling

    class ModulesAndSharedFixtures(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return ONE_WORKER.get(Path(module).name, module)

    config.option.loadscopereorder = False
    return ModulesAndSharedFixtures(config, log)


# The longest modules, longest first (their seconds summed over a CI run's --durations:
# docs/testing.md). Handed out first, they end before the short ones: when test_service, a
# fifth of the suite's work, started late, its worker ran alone for the last minute and more.
LONGEST = ("tests.test_service", "tests.test_precompile", "tests.test_flow_cli")


def pytest_collection_modifyitems(config, items):
    """On xdist workers, the LONGEST modules are handed out first, then modules with a test
    marked slow (servers, many subprocesses, whole bake-offs); the order within a module is
    kept."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    slow = {item.module.__name__ for item in items if item.get_closest_marker("slow")}

    def first(item) -> tuple[int, bool]:
        name = item.module.__name__
        rank = LONGEST.index(name) if name in LONGEST else len(LONGEST)
        return rank, name not in slow

    items.sort(key=first)
