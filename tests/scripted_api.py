"""A scripted HTTP server on 127.0.0.1 that speaks the Anthropic Messages API.

It replays a transcript: a list of steps, one per `POST /v1/messages` that carries tools (the
agent's turns). A step is a reply (content blocks, as a model would answer), an HTTP fault
(`fault(429)`), `hang()` (the answer never comes), or a callable that makes the step from the
request's body (to quote a receipt the harness just returned). Requests without tools (the side queries
the Claude Code CLI makes, e.g. for a title) get a short text reply and consume no step. Every
request is kept (headers and body), so a test can read what the agent sent back: tool results,
the key in `x-api-key`. Streaming requests (`"stream": true`) are answered as server-sent events.
"""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ids = itertools.count(1)


def text(words: str) -> dict:
    return {"type": "text", "text": words}


def tool(tool_name: str, **arguments) -> dict:
    return {
        "type": "tool_use",
        "id": f"toolu_{next(_ids):04d}",
        "name": tool_name,
        "input": arguments,
    }


def reply(*blocks: dict, stop: str | None = None, usage=(1000, 200)) -> dict:
    stop = stop or ("tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn")
    return {"reply": list(blocks), "stop": stop, "usage": usage}


def last_result(body: dict) -> str:
    """The text of the last tool result in a request (the Messages API or Claude Code's)."""
    for message in reversed(body.get("messages", [])):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in reversed(content):
            if block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    return "\n".join(b.get("text", "") for b in inner if isinstance(b, dict))
                return str(inner)
    return ""


def receipt_in(body: dict) -> str:
    for line in last_result(body).splitlines():
        if line.strip().startswith("receipt:"):
            return line.split(":", 1)[1].strip()
    return "none"


def fault(status: int, message: str = "scripted fault") -> dict:
    return {"fault": status, "message": message}


def hang() -> dict:
    return {"hang": True}


class ScriptedAPI:
    def __init__(self, steps: list[dict], side_reply: str = "ok"):
        self.steps = list(steps)
        self.side_reply = side_reply
        self.requests: list[dict] = []  # every request: {"path", "headers", "body"}
        self.turns: list[dict] = []  # the requests that consumed a step
        self.lock = threading.Lock()
        self.release = threading.Event()  # set on close: hung answers end
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> ScriptedAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def key_of(request: dict) -> str | None:
        """The API key a request carried (x-api-key, or a bearer token as SDK 2.x sends it)."""
        h = request["headers"]
        bearer = h.get("authorization", "")
        return h.get("x-api-key") or (bearer[7:] if bearer.startswith("Bearer ") else None)

    def remaining(self) -> int:
        return len(self.steps)

    def tool_results(self) -> list[dict]:
        """Every tool_result block the agent sent, in order."""
        found = []
        for turn in self.turns:
            for message in turn["body"].get("messages", []):
                content = message.get("content")
                if message.get("role") == "user" and isinstance(content, list):
                    found += [b for b in content if b.get("type") == "tool_result"]
        # each turn repeats the conversation so far: keep the first sighting of each result
        seen, unique = set(), []
        for block in found:
            if block["tool_use_id"] not in seen:
                seen.add(block["tool_use_id"])
                unique.append(block)
        return unique

    def _next(self, body: dict) -> dict | None:
        with self.lock:
            if not body.get("tools"):
                return None
            if not self.steps:
                return fault(400, "the scripted transcript has no more steps")
            step = self.steps.pop(0)
        return step(body) if callable(step) else step

    def _handler(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                self._send_json(200, {"data": [], "has_more": False})

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                record = {"path": self.path, "headers": headers, "body": body}
                with api.lock:
                    api.requests.append(record)
                if not self.path.split("?")[0].endswith("/v1/messages"):
                    if "count_tokens" in self.path:
                        return self._send_json(200, {"input_tokens": 100})
                    return self._send_json(200, {})
                step = api._next(body)
                if step is not None:
                    with api.lock:
                        api.turns.append(record)
                if step is None:
                    step = reply(text(api.side_reply), usage=(10, 2))
                if step.get("hang"):
                    api.release.wait(600)
                    return
                if "fault" in step:
                    error = {
                        "type": "error",
                        "error": {"type": "api_error", "message": step["message"]},
                    }
                    return self._send_json(step["fault"], error)
                message = {
                    "id": f"msg_{next(_ids):06d}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "scripted"),
                    "content": step["reply"],
                    "stop_reason": step["stop"],
                    "stop_sequence": None,
                    "usage": {"input_tokens": step["usage"][0], "output_tokens": step["usage"][1]},
                }
                if body.get("stream"):
                    return self._send_stream(message)
                self._send_json(200, message)

            def _send_json(self, status: int, data: dict):
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                if status == 429:
                    self.send_header("retry-after", "0")
                self.end_headers()
                self.wfile.write(payload)

            def _send_stream(self, message: dict):
                events = _stream_events(message)
                payload = "".join(
                    f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


def _stream_events(message: dict) -> list[tuple[str, dict]]:
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}
    events = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": opening},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events
