"""A local stand-in for the Anthropic Messages API that replays a script of turns.

Each request to ``POST /v1/messages`` consumes the next script entry: a :class:`Reply`
(content blocks, stop reason, usage) or a :class:`Failure` (an HTTP error with the API's error
body). The server checks what the real API would reject (a missing key, a tool_use left
without its tool_result) and keeps every request body in ``requests``. Point the real SDK at
it with :meth:`FakeAnthropic.client`.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, arguments: dict[str, Any], id: str = "") -> dict[str, Any]:
    """A tool_use block; an empty ``id`` is filled in by the server (``toolu_<turn>_<n>``)."""
    return {"type": "tool_use", "id": id, "name": name, "input": arguments}


@dataclass
class Reply:
    content: list[dict[str, Any]]
    stop_reason: str = ""  # default: tool_use when the content has a tool_use, else end_turn
    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_tokens: int = 0
    delay: float = 0.0  # seconds to wait before answering


@dataclass
class Failure:
    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


OVERLOADED = Failure(529, "overloaded_error", "Overloaded")
UNAUTHORIZED = Failure(401, "authentication_error", "invalid x-api-key")
FORBIDDEN = Failure(403, "permission_error", "Your API key does not have permission")


def bash(command: str, id: str = "") -> Reply:
    """A turn in which the model runs one shell command."""
    return Reply([tool_use("bash", {"command": command}, id)])


class FakeAnthropic:
    """The server; use as a context manager. ``repeat_last`` replays the last entry forever."""

    def __init__(self, script: list[Reply | Failure], *, repeat_last: bool = False) -> None:
        self.script = list(script)
        self.repeat_last = repeat_last
        self.requests: list[dict[str, Any]] = []
        self._served = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def client(self, **options: Any) -> anthropic.Anthropic:
        options.setdefault("max_retries", 0)
        return anthropic.Anthropic(base_url=self.url, api_key="test", **options)

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def tool_results(self, request_index: int) -> list[dict[str, Any]]:
        """The tool_result blocks of the last message of request number ``request_index``."""
        content = self.requests[request_index]["messages"][-1]["content"]
        if isinstance(content, str):
            return []
        return [block for block in content if block.get("type") == "tool_result"]

    # ------------------------------------------------------------------ serving
    def _next(self) -> tuple[int, Reply | Failure | None]:
        with self._lock:
            index = self._served
            self._served += 1
        if index < len(self.script):
            return index, self.script[index]
        if self.repeat_last and self.script:
            return index, self.script[-1]
        return index, None

    def _answer(self, headers: Any, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict]:
        self.requests.append(body)
        if not (headers.get("x-api-key") or headers.get("authorization")):
            return _error(Failure(401, "authentication_error", "x-api-key header is required"))
        problem = _conversation_problem(body.get("messages", []))
        if problem:
            return _error(Failure(400, "invalid_request_error", problem))
        index, entry = self._next()
        if entry is None:
            return _error(Failure(400, "invalid_request_error", "fake server: script exhausted"))
        if isinstance(entry, Failure):
            return _error(entry)
        time.sleep(entry.delay)
        content = [
            {**block, "id": block["id"] or f"toolu_{index}_{n}"}
            if block["type"] == "tool_use"
            else block
            for n, block in enumerate(entry.content)
        ]
        has_tool_use = any(block["type"] == "tool_use" for block in content)
        message = {
            "id": f"msg_fake_{index}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": content,
            "stop_reason": entry.stop_reason or ("tool_use" if has_tool_use else "end_turn"),
            "stop_sequence": None,
            "usage": {
                "input_tokens": entry.input_tokens,
                "output_tokens": entry.output_tokens,
                "cache_read_input_tokens": entry.cache_read_tokens,
            },
        }
        return 200, message, {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                if self.path.split("?")[0] != "/v1/messages":
                    self._send(404, {"type": "error", "error": {"type": "not_found_error"}}, {})
                    return
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                self._send(*fake._answer(self.headers, body))

            def _send(self, status: int, payload: dict, headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _error(failure: Failure) -> tuple[int, dict[str, Any], dict[str, str]]:
    body = {"type": "error", "error": {"type": failure.error_type, "message": failure.message}}
    return failure.status, body, failure.headers


def _conversation_problem(messages: list[dict[str, Any]]) -> str:
    """What the real API would reject: a tool_use not answered by the next message."""
    for turn, message in enumerate(messages):
        if message.get("role") != "assistant" or isinstance(message.get("content"), str):
            continue
        asked = {b["id"] for b in message["content"] if b.get("type") == "tool_use"}
        if not asked:
            continue
        following = messages[turn + 1]["content"] if turn + 1 < len(messages) else []
        answered = {
            b["tool_use_id"]
            for b in (following if isinstance(following, list) else [])
            if b.get("type") == "tool_result"
        }
        if asked - answered:
            return (
                f"messages.{turn + 1}: tool_use ids without tool_result: {sorted(asked - answered)}"
            )
    return ""
