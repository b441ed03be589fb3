"""The backends' offline steps that run the user's op stay in the box: TunableOp's offline run
(tasks/backends/offline_run.py) and aiter's GEMM recording (tasks/backends/gemm_shapes.py).

The op here is hostile at import: it writes outside, reads a secret file and looks for a
secret in its environment, connects to a listener on the host's loopback. Boxed, nothing of
that reaches the host; with BAKEOFF_ISOLATION=none (the control) the same op does, which shows
the checks can see an escape. On this CPU the offline run then fails at its `cuda` inputs,
after the import that matters here."""

import os
import shutil
import socket
import threading
from functools import partial

import pytest

from kernel_bakeoff.scripts import isolation
from kernel_bakeoff.scripts.freeze import freeze, measure_baseline
from kernel_bakeoff.tasks.backends import gemm_shapes, offline_run
from kernel_bakeoff.tasks.backends.base import BuildContext

from .conftest import ROOT

SECRET = "hostile-offline-" + os.urandom(6).hex()

KERNEL = """
import os, socket
import torch

SECRET = {reversed_secret!r}[::-1]

def attempt(word, fn):
    try:
        fn()
        print("ESCAPED-" + word, flush=True)
    except Exception as exc:
        print("refused-" + word, type(exc).__name__, flush=True)

def environment():
    if any(SECRET in v for v in os.environ.values()):
        return
    raise LookupError("not in the environment")

def loopback():
    if os.path.exists({port_file!r}):
        port = int(open({port_file!r}).read())
        socket.create_connection(("127.0.0.1", port), timeout=5).sendall(b"hi")
    else:
        raise FileNotFoundError("no port file")

attempt("write", lambda: open({outside!r}, "w").write("escaped"))
attempt("read", lambda: print(open({secret!r}).read()))
attempt("env", environment)
attempt("net", loopback)


def rmsnorm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The frozen hostile op, and the host paths it tries: (task, outside, port_file)."""
    if isolation.refusal():
        pytest.skip(f"no box here: {isolation.refusal()}")
    root = tmp_path_factory.mktemp("offline")
    op = root / "op"
    op.mkdir()
    shutil.copy(ROOT / "tests" / "corpus" / "rmsnorm_op" / "op.toml", op / "op.toml")
    secret = root / "secret.txt"
    secret.write_text(SECRET)
    outside, port_file = root / "outside.txt", root / "port"
    (op / "kernel.py").write_text(
        KERNEL.format(
            reversed_secret=SECRET[::-1],
            port_file=str(port_file),
            outside=str(outside),
            secret=str(secret),
        )
    )
    measure = partial(measure_baseline, samples=3, warmup=1, trials=1)
    return freeze(op, root / "task", measure=measure), outside, port_file


@pytest.fixture
def listener(hostile, monkeypatch):
    """A listener on the host's loopback (its port where the op looks), and what it heard; a
    database URL with the secret in the orchestrator's environment."""
    _, outside, port_file = hostile
    outside.unlink(missing_ok=True)
    monkeypatch.setenv("BAKEOFF_HISTORY_URL", f"postgresql://bakeoff:{SECRET}@127.0.0.1/x")
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port_file.write_text(str(server.getsockname()[1]))
    heard: list[bytes] = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            heard.append(conn.recv(100) or b"connected")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield heard
    stop.set()
    thread.join()
    server.close()
    port_file.unlink(missing_ok=True)


@pytest.mark.parametrize("mode", ["box", "none"])
def test_the_offline_run_imports_the_op_in_the_box(hostile, listener, tmp_path, monkeypatch, mode):
    task, outside, _ = hostile
    monkeypatch.setenv("BAKEOFF_ISOLATION", mode)
    log = tmp_path / "tune" / "tune.log"
    log.parent.mkdir()
    env = {"PYTORCH_TUNABLEOP_ENABLED": "1"}
    code = offline_run.run(task, "kernel.py:rmsnorm", env, 300, log)
    text = log.read_text()
    assert code != 0  # no CUDA here: it ends at the inputs, after the import
    if mode == "none":
        assert outside.exists() and listener and SECRET in text and "ESCAPED-net" in text
        assert "refused-env" in text  # the environment is the box's allow-list even so
        return
    # The write is judged on the host (`outside` is not there, below). The op's own word is not
    # enough: as an ordinary user the box's uid owns the parents of its bound paths, which the
    # box makes in its private /tmp, so the write lands there and the op says ESCAPED.
    assert "refused-write" in text or ("ESCAPED-write" in text and os.geteuid() != 0), text
    for word in ("read", "env", "net"):
        assert f"refused-{word}" in text, text
    assert SECRET not in text and not outside.exists() and listener == []


@pytest.mark.parametrize("mode", ["box", "none"])
def test_recording_the_gemms_imports_the_op_in_the_box(
    hostile, listener, tmp_path, monkeypatch, mode
):
    task, outside, _ = hostile
    monkeypatch.setenv("BAKEOFF_ISOLATION", mode)
    ctx = BuildContext.load(task, tmp_path / "work")
    assert gemm_shapes.record(ctx, "kernel.py:rmsnorm") == []  # a norm: no GEMM
    if mode == "none":
        assert outside.exists() and listener
        return
    assert not outside.exists() and listener == []
