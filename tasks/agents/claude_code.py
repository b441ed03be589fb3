"""The Claude Code driver: the `claude` CLI works in the lane workspace, as the seeds run it.

The CLI runs in the box (scripts/box.py) like the command tool: the workspace writable but its
read-only top entries, its own install (and node's) read-only, nothing else of the host (the
frozen task, the run, credentials, the network). The CLI never holds the API key. Its box has a
network namespace of its own, so the bridge in this process listens on a unix socket in a
directory bound into the box, and `scripts/unix_forward.py`, started first in the box, gives the
CLI a port on the box's own loopback that leads there (ANTHROPIC_BASE_URL), with a random
per-call token as its key; the bridge forwards its API requests to
the real base URL with the real key (and records tokens and cost), and answers two more routes
that the workspace's `bin/check` and `bin/submit` commands call: a check through the lane's own
check function (receipts, budget and device as in the Messages driver) and the structured
answer, validated against the role's model (re-asked once, like the other driver). The CLI may
use Read, Write, Edit, Glob, Grep and only those two commands in Bash; its permission settings
deny the frozen task. API faults are retried by the CLI itself (its one retry layer); the bridge
forwards, it does not retry.
"""

from __future__ import annotations

import contextvars
import json
import os
import secrets
import shutil
import signal
import socketserver
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
from pydantic import BaseModel, ValidationError

from kernel_bakeoff.scripts import box, isolation
from kernel_bakeoff.tasks.agents.drivers import RoleError
from kernel_bakeoff.tasks.agents.settings import AgentSettings, take_key
from kernel_bakeoff.tasks.agents.tools import INPUT_CHARS, input_size
from kernel_bakeoff.tasks.agents.transcript import BudgetSpent, Transcript
from kernel_bakeoff.tasks.agents.workspace import READ_ONLY_TOP

FORWARD = Path(__file__).resolve().parents[2] / "scripts" / "unix_forward.py"

DEFAULT_UPSTREAM = "https://api.anthropic.com"
DROPPED = {"host", "content-length", "x-api-key", "authorization", "accept-encoding", "connection"}
ALLOWED = ["Read", "Write", "Edit", "Glob", "Grep", "Bash(python3 bin/check:*)"]
ALLOWED += ["Bash(python3 bin/submit:*)", "Bash(python3 bin/quick_check:*)"]
ALLOWED += ["Bash(python3 bin/profile:*)"]

CLIENT = '''#!/usr/bin/env python3
"""{doc}"""
import json, os, sys, urllib.request

def main(route, payload):
    request = urllib.request.Request(
        os.environ["BAKEOFF_BRIDGE_URL"] + route,
        data=json.dumps(payload).encode(),
        headers={{"x-bridge-token": os.environ["BAKEOFF_BRIDGE_TOKEN"]}},
    )
    with urllib.request.urlopen(request, timeout=3600) as answer:
        data = json.loads(answer.read())
    print(data["text"])
    return 1 if data["is_error"] else 0
'''
CHECK = CLIENT.format(
    doc="bin/check PATH NAME CHANGED EXPECTED: check a candidate with the harness."
)
CHECK += """
if len(sys.argv) != 5:
    sys.exit("usage: python3 bin/check PATH NAME CHANGED EXPECTED")
keys = ("path", "name", "changed", "expected")
sys.exit(main("/bakeoff/tool", {"name": "check", "arguments": dict(zip(keys, sys.argv[1:]))}))
"""
QUICK = CLIENT.format(doc="bin/quick_check PATH: correctness only, small sizes, untimed.")
QUICK += """
if len(sys.argv) != 2:
    sys.exit("usage: python3 bin/quick_check PATH")
sys.exit(main("/bakeoff/tool", {"name": "quick_check", "arguments": {"path": sys.argv[1]}}))
"""
PROFILE = CLIENT.format(doc="bin/profile PATH WORKLOAD: a profile digest of a candidate.")
PROFILE += """
if len(sys.argv) != 3:
    sys.exit("usage: python3 bin/profile PATH WORKLOAD")
arguments = {"path": sys.argv[1], "workload": sys.argv[2]}
sys.exit(main("/bakeoff/tool", {"name": "profile", "arguments": arguments}))
"""
SUBMIT = CLIENT.format(doc="bin/submit JSON|@FILE: finish the role call with its answer.")
SUBMIT += """
if len(sys.argv) != 2:
    sys.exit("usage: python3 bin/submit JSON (or @FILE)")
text = sys.argv[1]
if text.startswith("@"):
    text = open(text[1:]).read()
sys.exit(main("/bakeoff/submit", {"answer": text}))
"""


class _UnixHTTPServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


class Bridge:
    """The CLI's API endpoint and tool endpoint, in the process that holds the key, on a unix
    socket (`socket_path`) in a directory of its own (`directory`, to bind into the box)."""

    def __init__(self, settings, transcript: Transcript, tools, output, accept):
        self.settings = settings
        self.transcript = transcript
        self.tools = tools
        self.output = output
        self.accept = accept
        self.token = "bridge-" + secrets.token_hex(16)
        self.upstream = (settings.base_url or DEFAULT_UPSTREAM).rstrip("/")
        self.answer: BaseModel | None = None
        self.invalid = 0
        self.failure: str | None = None
        self.context = contextvars.copy_context()  # Prefect's run context for the checks
        self.http = httpx.Client(timeout=settings.api_timeout_s)
        # A unix socket's path is at most 107 bytes: a long TMPDIR falls back to /tmp.
        where = None if len(tempfile.gettempdir()) < 60 else "/tmp"
        self.directory = Path(tempfile.mkdtemp(prefix="bakeoff-bridge-", dir=where))
        self.directory.chmod(0o711)  # the box's uid passes through; nobody lists it
        self.socket_path = str(self.directory / "api.sock")
        self.server = _UnixHTTPServer(self.socket_path, self._handler())
        os.chmod(self.socket_path, 0o600)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def admit(self, uid: int, gid: int) -> None:
        """Let the box's uid (nobody, when this process is root) connect to the socket."""
        if os.geteuid() == 0:
            os.chown(self.socket_path, uid, gid)

    def __enter__(self) -> Bridge:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.http.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def forward(self, path: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        key = take_key()
        if key is None:
            return 401, {}, b'{"type":"error","error":{"type":"authentication_error"}}'
        sent = {k: v for k, v in headers.items() if k.lower() not in DROPPED}
        sent["x-api-key"] = key
        spent = self.transcript.ledger.spent()
        if spent:
            self.failure = spent
            error = {"type": "error", "error": {"type": "budget", "message": spent}}
            return 429, {"content-type": "application/json"}, json.dumps(error).encode()
        try:
            answer = self.http.post(self.upstream + path, headers=sent, content=body)
        except httpx.HTTPError as exc:
            self.transcript.event("fault", error=f"{type(exc).__name__}: {exc}")
            return 504, {"content-type": "application/json"}, b'{"type":"error"}'
        keep = {
            k: v for k, v in answer.headers.items() if k.lower() in ("content-type", "retry-after")
        }
        if answer.status_code != 200:
            self.transcript.event("fault", status=answer.status_code, body=answer.text[:2000])
            self.transcript.retried()
        self._account(body, answer.content, keep.get("content-type", ""))
        return answer.status_code, keep, answer.content

    def _account(self, request: bytes, response: bytes, kind: str) -> None:
        try:
            sent = json.loads(request or b"{}")
        except json.JSONDecodeError:
            sent = {}
        usage, content = {"input_tokens": 0, "output_tokens": 0}, []
        if "event-stream" in kind:
            for line in response.decode(errors="replace").splitlines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                if event.get("type") == "message_start":
                    usage["input_tokens"] = event["message"]["usage"].get("input_tokens", 0)
                elif event.get("type") == "message_delta":
                    usage["output_tokens"] = event.get("usage", {}).get("output_tokens", 0)
                elif event.get("type") == "content_block_start":
                    content.append(event["content_block"])
                elif event.get("type") == "content_block_delta" and content:
                    delta = event["delta"]
                    block = content[-1]
                    if delta.get("type") == "text_delta":
                        block["text"] = block.get("text", "") + delta["text"]
                    elif delta.get("type") == "input_json_delta":
                        block["partial"] = block.get("partial", "") + delta["partial_json"]
        elif response:
            try:
                data = json.loads(response)
                usage = data.get("usage") or usage
                content = data.get("content", [])
            except json.JSONDecodeError:
                pass
        self.transcript.usage(usage.get("input_tokens", 0), usage.get("output_tokens", 0))
        last = (sent.get("messages") or [{}])[-1]
        self.transcript.event("turn", model=sent.get("model"), sent=last, answer=content)

    def tool(self, name: str, arguments: dict) -> tuple[str, bool]:

        text, is_error = self.context.copy().run(self._tool, name, arguments)
        size, limit = input_size(arguments), getattr(self.tools, "input_chars", INPUT_CHARS)
        shown = arguments if size <= limit else {"omitted": f"{size} characters, over {limit}"}
        self.transcript.event("tool", name=name, input=shown, result=text, is_error=is_error)
        return text, is_error

    def _tool(self, name: str, arguments: dict) -> tuple[str, bool]:
        try:
            return self.tools.call(name, arguments)
        except BudgetSpent as exc:
            self.failure = str(exc)
            return f"stop: {exc}", True

    def submit(self, text: str) -> tuple[str, bool]:
        try:
            answer = self.output.model_validate_json(text)
            if self.accept is not None:
                self.accept(answer)
        except (ValidationError, ValueError) as exc:
            self.invalid += 1
            self.transcript.event("invalid-answer", count=self.invalid, error=str(exc))
            if self.invalid > 1:
                self.failure = (
                    f"the answer did not validate after one re-ask: {str(exc).splitlines()[0]}"
                )
                return "refused again; the role has failed", True
            return f"Your answer does not match the schema; fix it and submit again:\n{exc}", True
        self.answer = answer
        self.transcript.event("submitted", answer=json.loads(answer.model_dump_json()))
        return "accepted; you are done", False

    def _handler(self):
        bridge = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _reply(self, status: int, headers: dict, body: bytes) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._reply(404, {}, b"")

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.startswith("/bakeoff/"):
                    if self.headers.get("x-bridge-token") != bridge.token:
                        return self._reply(403, {}, b"{}")
                    data = json.loads(body or b"{}")
                    if self.path == "/bakeoff/submit":
                        text, is_error = bridge.submit(str(data.get("answer", "")))
                    else:
                        text, is_error = bridge.tool(
                            data.get("name", ""), data.get("arguments", {})
                        )
                    payload = json.dumps({"text": text, "is_error": is_error}).encode()
                    return self._reply(200, {"content-type": "application/json"}, payload)
                if self.headers.get("x-api-key") != bridge.token:
                    return self._reply(401, {}, b'{"type":"error"}')
                self._reply(*bridge.forward(self.path, dict(self.headers), body))

        return Handler


def write_commands(root: Path) -> None:
    bin_dir = Path(root) / "bin"
    bin_dir.mkdir(exist_ok=True)
    scripts = (("check", CHECK), ("submit", SUBMIT), ("quick_check", QUICK), ("profile", PROFILE))
    for name, text in scripts:
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o555)


def cli_paths(executable: str) -> tuple[str, list[str]]:
    """The CLI's real file (what the box runs) and what it must read there: its npm install
    (the `node_modules` that holds it, or its own directory) and node's prefix."""
    found = shutil.which(executable) or executable
    real = Path(os.path.realpath(found))
    if not real.is_file():
        raise RoleError(f"the Claude Code CLI {executable!r} was not found")
    parts = real.parts
    read = [Path(*parts[: parts.index("node_modules") + 1]) if "node_modules" in parts else real]
    node = shutil.which("node")
    if node:  # a CLI that is a node script (`#!/usr/bin/env node`); /usr is the box's anyway
        prefix = Path(os.path.realpath(node)).parent.parent
        if prefix != Path("/"):
            read.append(prefix)
    return str(real), [str(p) for p in read]


def boxed_argv(argv: list[str], env: dict, bridge: Bridge, ws) -> list[str]:
    """`argv` (the CLI) started by the forwarder, in the box: the workspace writable but its
    read-only top entries; the CLI's install and the bridge's directory read-only; its own
    loopback up for the forwarder; nothing else of the host."""

    real, read = cli_paths(argv[0])
    plan = box.plan(
        read=[*read, bridge.directory],
        write=[ws.root],
        frozen=[ws.root / name for name in READ_ONLY_TOP],
        cwd=str(ws.root),
        loopback=True,
    )
    bridge.admit(plan["uid"], plan["gid"])
    names = "ANTHROPIC_BASE_URL,BAKEOFF_BRIDGE_URL"
    forward = [sys.executable, "-I", "-S", str(FORWARD), bridge.socket_path, names, "--"]
    return isolation.wrap([*forward, real, *argv[1:]], env, plan)


def converse(
    *,
    settings: AgentSettings,
    transcript: Transcript,
    system: str,
    prompt: str,
    tools,
    output: type[BaseModel],
    remaining=lambda: float("inf"),
    accept=None,
) -> BaseModel:

    refused = isolation.refusal()
    if refused:
        raise RoleError(refused)
    ws = tools.ws
    write_commands(ws.root)
    guide = (
        f"\n\nCheck a candidate with: python3 bin/check PATH NAME CHANGED EXPECTED\n"
        f"Try a draft (correctness only, untimed): python3 bin/quick_check PATH\n"
        f"Profile a candidate: python3 bin/profile PATH WORKLOAD\n"
        f"Finish with: python3 bin/submit JSON (or @FILE), the JSON matching this schema:\n"
        f"{json.dumps(output.model_json_schema())}"
    )
    # Belt and braces: the box holds none of these paths.
    deny = [f"Read({p}/**)" for p in ws.forbidden()] + [f"Edit({ws.task_dir}/**)"]
    config = {"permissions": {"deny": deny}}
    with Bridge(settings, transcript, tools, output, accept) as bridge:
        home = ws.root / ".home"
        home.mkdir(exist_ok=True)
        env = {k: os.environ[k] for k in ("PATH", "LANG", "TRITON_INTERPRET") if k in os.environ}
        env.update(
            HOME=str(home),
            ANTHROPIC_API_KEY=bridge.token,
            BAKEOFF_BRIDGE_TOKEN=bridge.token,
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )
        if not isolation.wanted():
            env["BAKEOFF_ISOLATION"] = "none"  # the forwarder and the CLI run unboxed
            transcript.event("warning", text=isolation.WARNING)
        argv = [settings.claude_code, "-p", prompt + guide, "--output-format", "json"]
        argv += ["--model", settings.model, "--max-turns", str(settings.max_turns)]
        argv += ["--append-system-prompt", system, "--allowedTools", ",".join(ALLOWED)]
        argv += ["--settings", json.dumps(config)]
        transcript.event("prompt", system=system, prompt=prompt, argv=argv[:1] + argv[3:])
        limit = max(1.0, min(remaining(), settings.max_lane_seconds))
        proc = subprocess.Popen(
            boxed_argv(argv, env, bridge, ws),
            cwd=ws.root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise RoleError(f"Claude Code did not finish within {limit:g} s") from None
        transcript.event(
            "cli-exit",
            status=proc.returncode,
            stdout=out.decode()[-4000:],
            stderr=err.decode()[-4000:],
        )
        if bridge.failure and bridge.answer is None:
            if "budget" in bridge.failure or "deadline" in bridge.failure:
                raise BudgetSpent(bridge.failure)
            raise RoleError(bridge.failure)
        if bridge.answer is None:
            raise RoleError(f"Claude Code exited ({proc.returncode}) without a valid bin/submit")
        return bridge.answer
