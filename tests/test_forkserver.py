"""The warm start: a server that has imported torch forks judges on request (scripts.forkserver)."""

import json
import os
import signal
import threading
import time

import pytest

from kernel_bakeoff.scripts import forkserver
from kernel_bakeoff.scripts.verdict import Status

from .conftest import ROOT


def _server_env(**extra) -> dict[str, str]:
    paths = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {"PATH": os.environ["PATH"], "PYTHONPATH": paths, **extra}


@pytest.fixture(scope="module")
def server():
    s = forkserver.Server(_server_env(MARK="server"))
    yield s
    s.close()


def _run(server, tmp_path, *argv, timeout_s=60.0, env=None):
    return server.run(
        "tests.forked_probe",
        [*argv],
        env=env or {"PATH": os.environ["PATH"], "ONLY": "this"},
        cwd=tmp_path,
        log_path=tmp_path / "out.log",
        timeout_s=timeout_s,
    )


def test_fork_runs_main_with_exactly_the_environment_asked_for(server, tmp_path):
    facts_path = tmp_path / "facts.json"
    finished = _run(server, tmp_path, "report", str(facts_path))
    assert finished.returncode == 3 and not finished.timed_out
    facts = json.loads(facts_path.read_text())
    assert facts["env"] == {"PATH": os.environ["PATH"], "ONLY": "this"}, facts  # no MARK
    assert os.path.samefile(facts["cwd"], tmp_path), facts
    assert facts["own_session"], facts
    assert facts["fds"] == [0, 1, 2, 3], facts  # 3: the listing; the server's pipes are gone
    assert facts["torch_preloaded"], facts  # the point: no second torch import
    assert facts["argv"] == ["tests.forked_probe", "report", str(facts_path)], facts
    assert "hello from the fork" in (tmp_path / "out.log").read_text()


@pytest.mark.parametrize(
    "compiler, env, preloaded",
    [(False, {}, False), (True, {}, True), (True, {"BAKEOFF_PRELOAD_COMPILER": "0"}, False)],
)
def test_a_server_for_checks_imports_the_compiler_for_its_forks(compiler, env, preloaded, tmp_path):
    s = forkserver.Server(_server_env(**env), compiler=compiler)
    try:
        facts = tmp_path / "facts.json"
        _run(s, tmp_path, "report", str(facts))
        assert json.loads(facts.read_text())["compiler_preloaded"] is preloaded
    finally:
        s.close()


@pytest.fixture
def compiler_probe(tmp_path, monkeypatch):
    """A stand-in for the compiler's modules that writes what `torch.cuda.is_available()`
    answered while it was imported."""
    import sys

    said = tmp_path / "said.txt"
    module = tmp_path / "compiler_probe.py"
    module.write_text(
        f"import torch\nopen({str(said)!r}, 'w').write(str(torch.cuda.is_available()))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(forkserver, "COMPILER_MODULES", ("compiler_probe",))
    yield said
    sys.modules.pop("compiler_probe", None)


def test_the_compilers_device_question_is_answered_without_the_driver(compiler_probe, monkeypatch):
    import torch

    real = torch.cuda.is_available
    monkeypatch.setattr(torch.cuda, "_is_compiled", lambda: True)  # a CUDA build
    monkeypatch.setattr(forkserver, "_nvml_sees_a_device", lambda: True)
    assert forkserver._import_compiler()
    assert compiler_probe.read_text() == "True"  # NVML's answer, for the import alone
    assert torch.cuda.is_available is real


@pytest.mark.parametrize("nvml, hip", [(None, None), (True, "6.2")])
def test_no_compiler_where_the_driver_alone_could_answer(compiler_probe, monkeypatch, nvml, hip):
    import torch

    monkeypatch.setattr(torch.cuda, "_is_compiled", lambda: True)
    monkeypatch.setattr(forkserver, "_nvml_sees_a_device", lambda: nvml)
    monkeypatch.setattr(torch.version, "hip", hip)
    assert not forkserver._import_compiler() and not compiler_probe.exists()


def test_a_server_whose_compiler_touched_the_device_starts_again_without_it(monkeypatch):
    class Restarted(Exception):
        pass

    def execv(path, argv):
        raise Restarted(argv)

    monkeypatch.setattr(forkserver.sandbox, "protect_self", lambda: None)
    monkeypatch.setattr(forkserver, "preload", lambda compiler: compiler)
    monkeypatch.setattr(forkserver, "forks_can_use_device", lambda: False)
    monkeypatch.setattr(forkserver.os, "execv", execv)
    with pytest.raises(Restarted) as restarted:
        forkserver.serve(compiler=True)
    assert restarted.value.args[0][1:] == [
        "-m",
        "kernel_bakeoff.scripts.forkserver",
    ]  # no --compiler


def test_forks_of_a_fresh_server_can_use_the_device():
    assert forkserver.forks_can_use_device()


def test_deadline_kills_the_fork(server, tmp_path):
    t0 = time.monotonic()
    finished = _run(server, tmp_path, "hang", timeout_s=1.0)
    assert finished.timed_out
    assert finished.returncode == -signal.SIGKILL
    assert time.monotonic() - t0 < 60  # its 1 s deadline, not the fork's hour


def test_a_crash_and_an_exception_come_back_as_exit_statuses(server, tmp_path):
    assert _run(server, tmp_path, "segfault").returncode == -signal.SIGSEGV
    finished = _run(server, tmp_path, "raise")
    assert finished.returncode == 1
    assert "raised in the fork" in (tmp_path / "out.log").read_text()


def test_the_server_survives_its_forks_and_exits_when_its_owner_lets_go(tmp_path):
    s = forkserver.Server(_server_env())
    assert _run(s, tmp_path, "segfault").returncode == -signal.SIGSEGV
    assert _run(s, tmp_path, "exit").returncode == 0
    s.close()
    assert s.proc.wait(timeout=10) == 0
    assert _run(s, tmp_path, "exit") is None  # the caller then starts the module itself


def test_a_closed_server_still_answers_for_what_it_started(tmp_path):
    s = forkserver.Server(_server_env())
    result = {}
    worker = threading.Thread(target=lambda: result.update(f=_run(s, tmp_path, "sleep", "1")))
    worker.start()
    deadline = time.monotonic() + 60
    while not s._answers and time.monotonic() < deadline:  # forked: its pid came back
        time.sleep(0.01)
    s.close()
    worker.join(timeout=60)
    assert result["f"].returncode == 0 and not result["f"].timed_out
    assert s.proc.wait(timeout=10) == 0


FORKS_ONCE = """
import os, sys, tempfile
from pathlib import Path
sys.path[0] = os.getcwd()  # the repository, importable after the fork's chdir
from kernel_bakeoff.scripts import sandbox

here = Path(sys.argv[1])
parents = tempfile.TemporaryDirectory(dir=here)  # the forking process's, finalized at its exit
pid = sandbox.fork_module(
    "tests.forked_probe", ["finalizers", str(here)], env=dict(os.environ), cwd=here,
    log_path=here / "fork.log",
)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), Path(parents.name).is_dir(), flush=True)
"""


def test_a_fork_finalizes_what_it_made_and_leaves_what_it_inherited(tmp_path):
    """A fork's exit runs the finalizers it made (its temporary directory goes) and not those
    of the process it was forked from (whose directory stays: that process finalizes it)."""
    import subprocess
    import sys

    said = subprocess.run(
        [sys.executable, "-c", FORKS_ONCE, str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert said.returncode == 0, said.stderr
    assert said.stdout.split() == ["0", "True"], (said.stdout, (tmp_path / "fork.log").read_text())
    assert [p.name for p in tmp_path.iterdir()] == ["fork.log"]  # both directories finalized


def test_servers_are_kept_per_judge_environment(monkeypatch):
    monkeypatch.setattr(
        forkserver,
        "Server",
        lambda env, compiler: type("S", (), {"alive": True, "closed": False})(),
    )
    monkeypatch.setattr(forkserver, "_servers", forkserver.OrderedDict())
    a = forkserver.server_for({"CUDA_VISIBLE_DEVICES": "0"})
    assert forkserver.server_for({"CUDA_VISIBLE_DEVICES": "0"}) is a
    assert forkserver.server_for({"CUDA_VISIBLE_DEVICES": "1"}) is not a
    compiling = forkserver.server_for({"CUDA_VISIBLE_DEVICES": "0"}, compiler=True)
    assert compiling is not a  # a plain server does not serve compiled checks
    assert forkserver.server_for({"CUDA_VISIBLE_DEVICES": "1"}, compiler=True) is not compiling
    # ... but a server with the compiler serves plain requests: no second server for them
    assert forkserver.server_for({"CUDA_VISIBLE_DEVICES": "0"}) is compiling
    assert forkserver.server_for({"CUDA_VISIBLE_DEVICES": "1"}) is not compiling
    monkeypatch.setenv("BAKEOFF_WARM_START", "0")
    assert forkserver.server_for({"CUDA_VISIBLE_DEVICES": "0"}) is None


@pytest.mark.parametrize("name", ["adversarial/patch_timers", "honest/rounding"])
def test_a_check_gives_the_same_verdict_cold_and_warm(monkeypatch, tmp_path, name):
    from functools import partial

    from kernel_bakeoff.scripts.check import check
    from kernel_bakeoff.scripts.freeze import freeze, measure_baseline

    small = {"samples": 5, "warmup": 2, "trials": 2}
    corpus = ROOT / "tests" / "corpus"
    task = freeze(
        corpus / "rmsnorm_op", tmp_path / "task", measure=partial(measure_baseline, **small)
    )
    candidate = corpus / f"{name}.py"
    warm = check(task, candidate, **small)
    monkeypatch.setenv("BAKEOFF_WARM_START", "0")
    cold = check(task, candidate, **small)
    assert warm.status == cold.status, (warm.reason, cold.reason)
    assert (warm.status is Status.PASSED) == name.startswith("honest")
