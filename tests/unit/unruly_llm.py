"""A local HTTP server that plays a misbehaving model, speaking OpenAI chat completions
(``/v1/chat/completions``) or the Anthropic Messages API (``/v1/messages``).

Each request is answered by the next scripted :class:`Turn` (the last one repeats): a
status, headers, the text or JSON the model "wrote", a ``finish``/``stop`` reason, or a
connection dropped mid-body. Every request body is kept in ``requests``.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Turn:
    """One answer: ``content`` is the model's text (a dict/list is sent as JSON: as the
    message text for OpenAI, as the forced tool's input for Anthropic); ``stop`` the
    finish/stop reason; ``status``/``body`` an HTTP error instead; ``drop`` sends half
    the body and closes the connection."""

    content: Any = ""
    stop: str | None = None
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False
    refusal: str | None = None


class UnrulyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, protocol: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.protocol = protocol
        self.turns: list[Turn] = [Turn({"facts": [], "entities": []})]
        self.answer: Callable[[dict[str, Any]], Turn] | None = None
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        port = self.server_address[1]
        return f"http://127.0.0.1:{port}" + ("/v1" if self.protocol == "openai" else "")

    def script(self, *turns: Turn) -> None:
        with self.lock:
            self.turns = list(turns)

    def next_turn(self, body: dict[str, Any]) -> Turn:
        with self.lock:
            self.requests.append(body)
            if self.answer is not None:
                return self.answer(body)
            return self.turns.pop(0) if len(self.turns) > 1 else self.turns[0]


def prompt_of(body: dict[str, Any]) -> str:
    """The text of a request's last user message."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def _openai(turn: Turn) -> dict[str, Any]:
    text = turn.content if isinstance(turn.content, str) else json.dumps(turn.content)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if turn.refusal:
        message = {"role": "assistant", "content": None, "refusal": turn.refusal}
    choice = {"index": 0, "message": message, "finish_reason": turn.stop or "stop"}
    return {"id": "c1", "object": "chat.completion", "choices": [choice]}


def _anthropic(turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
    if "tools" in body and not isinstance(turn.content, str):
        blocks = [{"type": "tool_use", "id": "t1", "name": "emit", "input": turn.content}]
        stop = turn.stop or "tool_use"
    else:
        text = turn.content if isinstance(turn.content, str) else json.dumps(turn.content)
        blocks = [{"type": "text", "text": text}] if text else []
        stop = turn.stop or "end_turn"
    return {"type": "message", "role": "assistant", "content": blocks, "stop_reason": stop}


class _Handler(BaseHTTPRequestHandler):
    server: UnrulyServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        turn = self.server.next_turn(body)
        if turn.status != 200:
            reply: Any = turn.body if turn.body is not None else {"error": {"message": "oops"}}
        elif self.server.protocol == "openai":
            reply = _openai(turn)
        else:
            reply = _anthropic(turn, body)
        data = json.dumps(reply).encode()
        self.send_response(turn.status)
        for name, value in turn.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data[: len(data) // 2] if turn.drop else data)
            if turn.drop:
                self.close_connection = True


@contextlib.contextmanager
def unruly(protocol: str) -> Iterator[UnrulyServer]:
    server = UnrulyServer(protocol)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
