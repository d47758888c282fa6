"""Scripted chat models behind real HTTP servers (stdlib ``http.server`` on a free loopback
port, in a thread): one speaks OpenAI chat completions with tool calls, the other the
Anthropic Messages API with ``tool_use`` blocks.

They stand in for a model: :func:`decide` reads the request (reduced to a neutral
form: system text, messages, tool names) and answers like a well-behaved assistant
following reference 001 — asks before storing new information, stores on an explicit
"remember that…", updates a memory by the id it finds in the system prompt's memory
block, answers "what do you know about X" from that block only. Structured requests
(the consolidation extractor) get a JSON extraction. Every request is kept in
``requests`` so tests can assert what the model was shown.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ID_LINE = re.compile(r"^- \[id:(\w{8})\] (.*)$", re.MULTILINE)  # a fact
RULE_LINE = re.compile(r"^- \[\w+\] (.*) \[id:(\w{8})\]$", re.MULTILINE)  # a standing procedure
ASK = "Would you like me to remember that {}?"


@dataclass
class Seen:
    """One request, protocol-neutral."""

    protocol: str
    body: dict[str, Any]
    headers: dict[str, str]
    system: str
    messages: list[dict[str, Any]]  # role user / assistant / tool; content text
    tools: list[str]
    structured: bool  # a JSON-schema request (consolidation), not a chat turn

    def memory_lines(self) -> dict[str, str]:
        """``id -> text`` of the fact and standing-procedure lines in the system prompt."""
        facts = {m.group(1): m.group(2) for m in ID_LINE.finditer(self.system)}
        return facts | {m.group(2): m.group(1) for m in RULE_LINE.finditer(self.system)}

    def texts(self, role: str) -> list[str]:
        return [m["content"] for m in self.messages if m["role"] == role]


@dataclass
class Answer:
    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def decide(seen: Seen) -> Answer:
    """What the scripted model says to ``seen``."""
    if seen.structured:
        return Answer(json.dumps(_extraction(seen)))
    if "finish_task" in seen.tools:
        return _autonomous(seen)
    last = seen.messages[-1]
    if last["role"] == "tool":
        first = (last["content"].splitlines() or [""])[0]
        return Answer(f"Done. ({first})")
    text = last["content"].strip()
    low = text.lower()
    if low.startswith("remember that "):
        fact = text[len("remember that ") :].rstrip(".")
        fact = fact[0].upper() + fact[1:]
        tool = "add_to_memory" if seen.protocol == "openai" else "remember"
        return Answer("I'll note that.", [(tool, {"content": fact, "category": "person"})])
    if low.startswith("what do you know about "):
        topic = text[len("what do you know about ") :].rstrip("?").strip()
        lines = [t for t in seen.memory_lines().values() if topic.lower() in t.lower()]
        return Answer("I know: " + "; ".join(lines) if lines else f"Nothing about {topic}.")
    if "working with " in low:
        name = text[low.index("working with ") + len("working with ") :].split()[0]
        return Answer(ASK.format(f"{name} is a project collaborator"))
    if low.startswith("no"):
        return Answer("No problem, I won't store that.")
    if low.startswith("yes"):
        asked = next(m for m in reversed(seen.texts("assistant")) if "remember that" in m)
        fact = asked.split("remember that ", 1)[1].rstrip("?")
        subject = fact.split()[0]
        args = {"content": fact, "category": "person", "subject": subject}
        return Answer("", [("add_to_memory", args)])
    if " moved to " in low and not low.startswith("i "):  # "Sarah moved to the Design team"
        person = text.split()[0]
        team = text[low.index(" moved to ") + len(" moved to ") :].split(" last ")[0]
        ids = [i for i, t in seen.memory_lines().items() if person.lower() in t.lower()]
        if not ids:
            return Answer(f"I have nothing about {person} to update.")
        args = {"memory_id": ids[0], "content": f"{person} works on {team}"}
        return Answer("", [("update_memory", args)])
    if low.startswith("record episode: "):
        return Answer("", [("record_episode", {"content": text[len("record episode: ") :]})])
    if low.startswith("always call recall"):
        return Answer("", [("recall", {"query": "anything"})])
    if low.startswith("report procedure "):  # "report procedure ID failed" (the tool)
        pid = text.split()[2]
        args = {"memory_id": pid, "success": "failed" not in low, "duration_ms": 50}
        return Answer("", [("record_procedure_use", args)])
    if low.startswith("which rule do you follow"):  # cites the rule from its instructions
        rules = [i for i, t in seen.memory_lines().items() if t.startswith("Always")]
        return Answer(f"I follow [id:{rules[0]}]." if rules else "None.")
    if low.startswith("what did i say"):
        earlier = seen.texts("user")[:-1]
        said = " | ".join(earlier) if earlier else "nothing yet"
        return Answer(f"Earlier you said: {said}")
    return Answer(f"OK: {text}")


def _autonomous(seen: Seen) -> Answer:
    """An autonomous run (``finish_task`` offered): look in memory, then finish with a
    summary; a task saying "never finish" only ever answers in text (the step limit)."""
    task = seen.texts("user")[-1] if "Continue working" not in seen.texts("user")[-1] else ""
    task = task or next(t for t in seen.texts("user") if "Continue working" not in t)
    if "never finish" in task.lower():
        return Answer("Still working on it.")
    if seen.messages[-1]["role"] != "tool":
        return Answer("Let me check my memory first.", [("recall", {"query": task})])
    return Answer("", [("finish_task", {"summary": f"Finished: {task}"})])


def _extraction(seen: Seen) -> dict[str, Any]:
    convo = " ".join(seen.texts("user"))
    facts = []
    if "moved to Porto" in convo:
        facts.append(
            {"content": "The user lives in Porto", "type": "semantic", "category": "context",
             "subject": "user", "key": "home_city", "confidence": 0.9}
        )  # fmt: skip
    return {"facts": facts, "entities": []}


# ---------------------------------------------------------------------- protocols
def _openai_seen(body: dict[str, Any], headers: dict[str, str]) -> Seen:
    system, messages = "", []
    for msg in body["messages"]:
        role = msg["role"]
        if role == "system":
            system += msg["content"]
        elif role == "tool":
            messages.append({"role": "tool", "content": msg["content"], "id": msg["tool_call_id"]})
        else:
            calls = [c["function"]["name"] for c in msg.get("tool_calls") or []]
            messages.append({"role": role, "content": msg.get("content") or "", "calls": calls})
    tools = [t["function"]["name"] for t in body.get("tools") or []]
    structured = "response_format" in body
    return Seen("openai", body, headers, system, messages, tools, structured)


def _openai_reply(answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if answer.calls:
        message["tool_calls"] = [
            {"id": f"call_{n}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for n, (name, args) in enumerate(answer.calls)
        ]  # fmt: skip
    finish = "tool_calls" if answer.calls else "stop"
    return {"id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip


def _anthropic_seen(body: dict[str, Any], headers: dict[str, str]) -> Seen:
    messages: list[dict[str, Any]] = []
    for msg in body["messages"]:
        content = msg["content"]
        if isinstance(content, str):
            messages.append({"role": msg["role"], "content": content, "calls": []})
            continue
        texts = [b["text"] for b in content if b["type"] == "text"]
        calls = [b["name"] for b in content if b["type"] == "tool_use"]
        for block in content:
            if block["type"] == "tool_result":
                messages.append(
                    {"role": "tool", "content": block["content"], "id": block["tool_use_id"]}
                )
        if texts or calls:
            messages.append({"role": msg["role"], "content": "".join(texts), "calls": calls})
    tools = [t["name"] for t in body.get("tools") or []]
    structured = (body.get("tool_choice") or {}).get("type") == "tool"
    system = body.get("system") or ""
    return Seen("anthropic", body, headers, system, messages, tools, structured)


def _anthropic_reply(answer: Answer, seen: Seen) -> dict[str, Any]:
    if seen.structured:  # the forced "emit" tool carries the JSON
        blocks = [{"type": "tool_use", "id": "toolu_emit", "name": "emit",
                   "input": json.loads(answer.text)}]  # fmt: skip
        return {"type": "message", "role": "assistant", "content": blocks,
                "stop_reason": "tool_use"}  # fmt: skip
    blocks = [{"type": "text", "text": answer.text}] if answer.text else []
    blocks += [
        {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args}
        for n, (name, args) in enumerate(answer.calls)
    ]
    stop = "tool_use" if answer.calls else "end_turn"
    return {"id": "msg_1", "type": "message", "role": "assistant", "content": blocks,
            "stop_reason": stop}  # fmt: skip


# ---------------------------------------------------------------------- the server
class FakeModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, protocol: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.protocol = protocol
        self.requests: list[Seen] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        port = self.server_address[1]
        return f"http://127.0.0.1:{port}" + ("/v1" if self.protocol == "openai" else "")

    def chats(self) -> list[Seen]:
        """The chat-turn requests (not consolidation)."""
        return [s for s in self.requests if not s.structured]

    def tool_calls(self) -> list[str]:
        """Names of every tool the model asked for, in order."""
        return [c for s in self.chats() for m in s.messages for c in m.get("calls", [])]


class _Handler(BaseHTTPRequestHandler):
    server: FakeModelServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers = {k.lower(): v for k, v in self.headers.items()}
        proto = self.server.protocol
        expected = "/v1/chat/completions" if proto == "openai" else "/v1/messages"
        if self.path != expected:
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        if proto == "openai":
            seen = _openai_seen(body, headers)
            reply = _openai_reply(decide(seen))
        else:
            seen = _anthropic_seen(body, headers)
            reply = _anthropic_reply(decide(seen), seen)
        with self.server.lock:
            self.server.requests.append(seen)
        self._send(200, reply)

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data)


@contextlib.contextmanager
def serving(protocol: str) -> Iterator[FakeModelServer]:
    server = FakeModelServer(protocol)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
