"""A TCP port on the box's own loopback that leads to one unix socket of the trusted side.

The Claude Code CLI speaks HTTP to a base URL, but its box has a network namespace of its own:
nothing of the host is reachable, the driver's bridge included. The bridge listens on a unix
socket in a directory bound into the box instead; this program, started as the box's code
(`python -I -S unix_forward.py SOCKET NAMES -- ARGV`), listens on 127.0.0.1 in the box (a
port the kernel picks), sets each variable in NAMES (comma-separated) to that address, starts
a child that relays every connection to SOCKET byte for byte, and execs ARGV. The bridge checks
its per-call token on every request; this relay reads nothing it carries.

It imports only the standard library (it starts with -I -S, before the CLI), and ends with ARGV:
the child dies with it (and the box's PID namespace with both).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import threading

_PR_SET_PDEATHSIG = 1


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    """Copy src to dst until src ends, then end dst's writing side (an HTTP client may wait
    for the answer after closing its own side)."""
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _serve(conn: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        conn.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, conn), daemon=True)
    back.start()
    _pipe(conn, upstream)
    back.join()
    conn.close()
    upstream.close()


def relay(listener: socket.socket, path: str) -> None:
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve, args=(conn, path), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: unix_forward.py SOCKET NAME[,NAME...] -- ARGV", file=sys.stderr)
        return 2
    path, names, command = argv[0], argv[1].split(","), argv[3:]
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    parent = os.getpid()
    sys.stdout.flush()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # it ended before the line above
            os._exit(0)
        os.closerange(0, 3)  # the CLI's streams stay the CLI's alone
        try:
            relay(listener, path)
        finally:
            os._exit(0)
    listener.close()
    for name in filter(None, names):
        os.environ[name] = url
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"unix_forward: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    return 127  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
