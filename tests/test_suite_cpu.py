"""benchmarks/suite_cpu.py's reading of a saved record: warm servers split from their forks."""

from benchmarks.suite_cpu import servers


def proc(pid, ppid, cmd, cpu, comm="python"):
    return {"pid": pid, "ppid": ppid, "comm": comm, "cmd": cmd, "test": None, "cpu_s": cpu}


def test_servers_are_split_from_their_forks_and_named_by_what_started_them(capsys):
    worker = proc(10, 1, "python -u -c import sys;exec(eval(sys.stdin.readline()))", 50.0)
    freeze = proc(20, 10, "python -m kernel_bakeoff.scripts.freeze kernel out answer.json", 1.0)
    compiling = proc(30, 10, "python -m kernel_bakeoff.scripts.forkserver --compiler", 4.0)
    plain = proc(40, 20, "python -m kernel_bakeoff.scripts.forkserver", 1.5)
    forks = [proc(31, 30, "python -m kernel_bakeoff.scripts.forkserver --compiler", 0.25),
             proc(41, 40, "python -m kernel_bakeoff.scripts.forkserver", 0.5)]  # fmt: skip
    servers([worker, freeze, compiling, plain, *forks])
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        "0.8 s 2 processes forks",
        "4.0 s 1 processes servers with the compiler, started by pytest workers",
        "1.5 s 1 processes plain servers, started by freeze and size probes",
    ]
