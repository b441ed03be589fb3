"""Debian's headless Chromium for tests: a page's DOM after its scripts ran, a screenshot, and
the network requests the page made.

Nothing leaves the machine: a proxy on 127.0.0.1 is the browser's only way out
(`--proxy-server`, loopback not bypassed) and answers every request 502. Chromium itself asks
Google for the time, the signed-in accounts and more even with background networking off; those
requests carry no initiator in its NetLog ("not an origin"), while every request a page makes
names the page's origin ("null" for a file:// page). So a page's requests are the NetLog's
URL requests that name an initiator.
"""

from __future__ import annotations

import itertools
import json
import shutil
import socket
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
BROWSER_ITSELF = "not an origin"  # NetLog initiator of requests no page asked for


def available() -> bool:
    return Path(CHROMIUM).is_file() or shutil.which("chromium") is not None


class RecordingProxy:
    def __init__(self):
        self.requests: list[str] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    first = conn.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
                except OSError:
                    first = "(unreadable request)"
                self.requests.append(first)
                try:
                    conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    def close(self):
        self.sock.close()


def page_requests(netlog: Path) -> list[str]:
    """URLs of the requests a page made (not Chromium's own), from a NetLog file."""
    data = json.loads(Path(netlog).read_text())
    start = data["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in data["events"]:
        params = event.get("params") or {}
        if event["type"] == start and params.get("url"):
            if params.get("initiator") != BROWSER_ITSELF:
                urls.append(params["url"])
    return urls


@contextmanager
def browser_run():
    """Yields run(page, *extra_flags) -> (CompletedProcess, URLs the page requested), and the
    request lines the proxy saw (the page's and Chromium's own)."""
    proxy = RecordingProxy()
    profile = Path(tempfile.mkdtemp(prefix="bakeoff-chromium-"))
    counter = itertools.count()

    def run(page: Path, *extra: str, timeout: float = 120):
        netlog = profile.parent / f"{profile.name}-netlog-{next(counter)}.json"
        args = [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--proxy-server=http://127.0.0.1:{proxy.port}",
            "--proxy-bypass-list=<-loopback>",
            "--virtual-time-budget=15000",
            f"--log-net-log={netlog}",
            *extra,
            Path(page).resolve().as_uri(),
        ]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        try:
            return proc, page_requests(netlog)
        finally:
            netlog.unlink(missing_ok=True)

    try:
        yield run, proxy.requests
    finally:
        proxy.close()
        shutil.rmtree(profile, ignore_errors=True)


def dump_dom(run, page: Path) -> tuple[str, list[str]]:
    """(the DOM after the page's scripts ran, the URLs the page requested)."""
    proc, requested = run(page, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, requested


def screenshot(run, page: Path, out: Path, size: str = "1280,3600") -> list[str]:
    """Writes a PNG of the page; returns the URLs the page requested."""
    proc, requested = run(page, f"--screenshot={out}", f"--window-size={size}")
    assert proc.returncode == 0 and Path(out).is_file(), proc.stderr[-2000:]
    return requested
