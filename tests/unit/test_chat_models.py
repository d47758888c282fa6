"""Chat with tool calling: the request and reply shapes of both protocols (pure functions
and against a local HTTP server with canned answers), and how an agent's model and
tools are chosen from its role."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memloci.errors import ProviderError, ValidationError
from memloci.providers.chat import (
    AnthropicChat,
    OpenAIChat,
    ToolCall,
    anthropic_messages,
    anthropic_tool_entries,
    load_chat_model,
    openai_messages,
    openai_tool_entries,
    parse_anthropic_turn,
    parse_openai_turn,
)
from memloci.providers.llm import BadReply
from memloci.runtime.agent import AGENT_TOOLS, agent_tools, model_spec, tool_specs
from memloci.runtime.role import MemoryConfig, Role
from memloci.tools import anthropic_tools, openai_tools

CALL = ToolCall("call_1", "recall", '{"query": "boss"}')
TURNS: list[dict[str, Any]] = [
    {"role": "user", "content": "Who is my boss?"},
    {"role": "assistant", "content": "Let me look.", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "name": "recall", "content": "Alec"},
]


# ---------------------------------------------------------------------- shapes
def test_openai_messages() -> None:
    assert openai_messages(TURNS, "Be brief.") == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Who is my boss?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "recall", "arguments": '{"query": "boss"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Alec"},
    ]  # fmt: skip
    silent = [{"role": "user", "content": "x"}, {**TURNS[1], "content": ""}]
    assert openai_messages(silent)[1]["content"] is None  # tool calls only
    with pytest.raises(ValidationError):
        openai_messages([{"role": "system", "content": "no"}])


def test_anthropic_messages_alternate_and_carry_tool_blocks() -> None:
    error = {"role": "tool", "tool_call_id": "call_2", "content": "Error: x", "is_error": True}
    two = ToolCall("call_2", "forget", "not json")
    turns = [
        *TURNS[:1], {"role": "user", "content": "Quickly."},
        {"role": "assistant", "content": "", "tool_calls": [CALL, two]}, TURNS[2], error,
    ]  # fmt: skip
    assert anthropic_messages(turns) == [
        {"role": "user", "content": [
            {"type": "text", "text": "Who is my boss?"}, {"type": "text", "text": "Quickly."}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_1", "name": "recall", "input": {"query": "boss"}},
            {"type": "tool_use", "id": "call_2", "name": "forget", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "Alec"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "Error: x",
             "is_error": True}]},
    ]  # fmt: skip


def test_tool_entries_are_the_published_schemas() -> None:
    specs = tool_specs(list(AGENT_TOOLS))
    assert openai_tool_entries(specs) == openai_tools(AGENT_TOOLS)
    assert anthropic_tool_entries(specs) == anthropic_tools(AGENT_TOOLS)


def test_parse_openai_turn() -> None:
    def body(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
        return {"choices": [{"message": message, "finish_reason": finish}]}

    turn = parse_openai_turn(body({"content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "recall", "arguments": '{"q": 1}'}},
        {"type": "function", "function": {"name": "forget", "arguments": {"memory_id": "x"}}},
    ]}, "tool_calls"))  # fmt: skip
    assert turn.text == "" and turn.stop_reason == "tool_calls"
    assert turn.tool_calls == (
        ToolCall("a", "recall", '{"q": 1}'),
        ToolCall("call_1", "forget", '{"memory_id": "x"}'),  # Ollama sends objects, no id
    )
    assert parse_openai_turn(body({"content": [{"type": "text", "text": "hi"}]})).text == "hi"
    with pytest.raises(BadReply):
        parse_openai_turn({"choices": []})
    with pytest.raises(BadReply):
        parse_openai_turn(body({"tool_calls": [{"function": {}}]}))
    with pytest.raises(ProviderError, match="refused"):
        parse_openai_turn(body({"refusal": "no"}))
    with pytest.raises(ProviderError, match="cut off"):
        parse_openai_turn(body({"content": ""}, "length"))


def test_parse_anthropic_turn() -> None:
    turn = parse_anthropic_turn({"content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "t1", "name": "recall", "input": {"query": "boss"}},
    ], "stop_reason": "tool_use"})  # fmt: skip
    assert turn.text == "Checking." and turn.stop_reason == "tool_use"
    assert turn.tool_calls == (ToolCall("t1", "recall", '{"query": "boss"}'),)
    assert turn.tool_calls[0].input() == {"query": "boss"}
    with pytest.raises(BadReply):
        parse_anthropic_turn({"content": "text"})
    with pytest.raises(ProviderError, match="cut off"):
        parse_anthropic_turn({"content": [], "stop_reason": "max_tokens"})


# ---------------------------------------------------------------------- over HTTP
class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: list[tuple[int, Any]]
    seen: list[dict[str, Any]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.seen.append({"path": self.path, "body": body, "headers": headers})
        status, reply = self.server.script.pop(0)
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.script, srv.seen = [], []
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(srv: _Server, suffix: str = "") -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}{suffix}"


OPENAI_OK = {"choices": [{"message": {"content": "Alec.", "role": "assistant"},
                          "finish_reason": "stop"}]}  # fmt: skip


def test_openai_chat_request(server: _Server) -> None:
    server.script = [(500, {"error": {"message": "busy"}}), (200, OPENAI_OK)]
    names = ["recall", "update_memory"]
    with OpenAIChat(model="m", base_url=_url(server, "/v1"), api_key="sk-test") as llm:
        llm.retry_backoff = 0
        turn = llm.chat(TURNS, system="Be brief.", tools=tool_specs(names), max_tokens=99)
    assert turn.text == "Alec." and turn.tool_calls == ()
    request = server.seen[-1]
    assert request["path"] == "/v1/chat/completions" and len(server.seen) == 2  # retried
    assert request["headers"]["authorization"] == "Bearer sk-test"
    body = request["body"]
    assert body["tools"] == openai_tools(names)
    assert body["messages"] == openai_messages(TURNS, "Be brief.")
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("m", 99, 0.7)


def test_openai_chat_without_tools_support_says_so(server: _Server) -> None:
    server.script = [(400, {"error": {"message": "model does not support tools"}})]
    llm = OpenAIChat(model="m", base_url=_url(server, "/v1"))
    with llm, pytest.raises(ProviderError, match="does not support tools") as info:
        llm.chat([{"role": "user", "content": "hi"}], tools=tool_specs(["recall"]))
    assert info.value.hint is not None and "tool calling" in info.value.hint
    assert "tools" in server.seen[0]["body"]
    server.script = [(200, OPENAI_OK)]
    with OpenAIChat(model="m", base_url=_url(server, "/v1")) as llm:
        llm.chat([{"role": "user", "content": "hi"}])
    assert "tools" not in server.seen[-1]["body"]  # no tools: no key


def test_anthropic_chat_request(server: _Server) -> None:
    reply = {"content": [{"type": "tool_use", "id": "t9", "name": "recall",
                          "input": {"query": "boss"}}], "stop_reason": "tool_use"}  # fmt: skip
    server.script = [(200, reply)]
    names = ["recall", "add_to_memory"]
    with AnthropicChat(model="claude-x", base_url=_url(server), api_key="k") as llm:
        turn = llm.chat(TURNS, system="Be brief.", tools=tool_specs(names), temperature=0.2)
    assert turn.tool_calls == (ToolCall("t9", "recall", '{"query": "boss"}'),)
    request = server.seen[0]
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == "k"
    assert request["headers"]["anthropic-version"] == "2023-06-01"
    body = request["body"]
    assert body["system"] == "Be brief." and body["temperature"] == 0.2
    assert body["tools"] == anthropic_tools(names)
    assert body["messages"] == anthropic_messages(TURNS)


def test_load_chat_model() -> None:
    assert isinstance(load_chat_model("openai", model="m"), OpenAIChat)
    assert isinstance(load_chat_model("anthropic", model="m"), AnthropicChat)
    with pytest.raises(ValidationError, match="unknown chat provider"):
        load_chat_model("gemini")


# ---------------------------------------------------------------------- from the role
def test_agent_tools_follow_the_tier_flags() -> None:
    assert agent_tools(None) == []
    assert agent_tools(MemoryConfig()) == list(AGENT_TOOLS)
    no_facts = agent_tools(MemoryConfig.model_validate({"facts": {"enabled": False}}))
    assert "recall" in no_facts and "forget" not in no_facts
    assert not {"remember", "add_to_memory", "update_memory"} & set(no_facts)
    quiet = MemoryConfig.model_validate(
        {"episodic": {"enabled": False}, "procedural": {"enabled": False}}
    )
    assert not {"record_episode", "learn_procedure"} & set(agent_tools(quiet))
    off = {"facts": {"enabled": False}, "episodic": {"enabled": False},
           "procedural": {"enabled": False}}  # fmt: skip
    assert agent_tools(MemoryConfig.model_validate(off)) == []  # no long-term tier at all


def test_model_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MY_KEY", raising=False)
    local = Role.model_validate(
        {"model": {"provider": "openai", "name": "llama3", "base_url": "http://localhost:1/v1",
                   "temperature": 0.1, "max_tokens": 50}}
    )  # fmt: skip
    spec = model_spec(local)
    assert spec.provider == "openai" and spec.label == "openai:llama3"
    assert spec.options == {"model": "llama3", "base_url": "http://localhost:1/v1"}
    assert (spec.temperature, spec.max_tokens) == (0.1, 50)
    cloud = Role.model_validate(
        {"model": {"provider": "anthropic", "name": "c", "api_key_env": "MY_KEY"}}
    )
    with pytest.raises(ValidationError, match="set MY_KEY"):
        model_spec(cloud)
    monkeypatch.setenv("MY_KEY", "x")
    assert model_spec(cloud).options == {"model": "c", "api_key_env": "MY_KEY"}
    with pytest.raises(ValidationError, match="names no chat model") as info:
        model_spec(Role(), source="bot.yaml")
    assert info.value.hint is not None and "bot.yaml" in info.value.hint
    monkeypatch.setenv("MEMLOCI_LLM", "openai")
    monkeypatch.setenv("MEMLOCI_LLM_OPTIONS", '{"model": "g", "base_url": "http://h:1/v1"}')
    assert model_spec(Role()).options == {"model": "g", "base_url": "http://h:1/v1"}
    monkeypatch.delenv("MEMLOCI_LLM_OPTIONS")
    with pytest.raises(ValidationError, match="set OPENAI_API_KEY"):
        model_spec(Role())
