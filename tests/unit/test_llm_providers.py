"""LLM clients against local HTTP servers that speak each provider's protocol, the
registry, and tolerant JSON reply parsing."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import BaseModel, RootModel

from memloci.errors import ProviderError, ValidationError
from memloci.providers import llm as registry
from memloci.providers.anthropic import ANTHROPIC_VERSION, AnthropicLLM
from memloci.providers.llm import (
    LLM,
    complete_json,
    json_schema_for,
    llm_names,
    load_llm,
    parse_json_reply,
    register_llm,
)
from memloci.providers.openai_llm import OpenAILLM

# --- a local server speaking OpenAI chat completions and Anthropic messages ----------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]
    script: list[tuple[Any, ...]]  # canned (status, body[, headers]) answers, used first
    reply: Any  # what the default behaviour answers with (text, or JSON for tools)
    reject_formats: set[str]  # response_format types answered with HTTP 400
    delay: float


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client gave up (timeout test)
            self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.requests.append({"path": self.path, "body": body, "headers": headers})
        if self.server.delay:
            time.sleep(self.server.delay)
        if self.server.script:
            self._send(*self.server.script.pop(0))
        elif self.path == "/v1/chat/completions":
            self._openai(body)
        elif self.path == "/v1/messages":
            self._anthropic(body)
        else:
            self._send(404, {"error": {"message": "no such route"}})

    def _openai(self, body: dict[str, Any]) -> None:
        fmt = (body.get("response_format") or {}).get("type")
        if fmt in self.server.reject_formats:
            message = f"response_format type '{fmt}' is not supported by this server"
            self._send(400, {"error": {"message": message, "type": "invalid_request_error"}})
            return
        reply = self.server.reply
        content = reply if isinstance(reply, str) else json.dumps(reply)
        message = {"role": "assistant", "content": content}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        self._send(200, {"id": "c1", "object": "chat.completion", "choices": [choice]})

    def _anthropic(self, body: dict[str, Any]) -> None:
        if "tools" in body:
            name = body["tool_choice"]["name"]
            block = {"type": "tool_use", "id": "t1", "name": name, "input": self.server.reply}
            blocks = [{"type": "text", "text": "Here you go."}, block]
            stop = "tool_use"
        else:
            blocks, stop = [{"type": "text", "text": self.server.reply}], "end_turn"
        self._send(200, {"type": "message", "role": "assistant", "content": blocks,
                         "stop_reason": stop})  # fmt: skip


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.requests, srv.script, srv.reply, srv.reject_formats, srv.delay = [], [], "hi", set(), 0.0
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


Make = Callable[..., Any]


@pytest.fixture
def make(server: _Server) -> Iterator[Make]:
    """``make(OpenAILLM, **options)`` → a client of the local server, closed afterwards."""
    made: list[Any] = []

    def build(cls: type[Any], **options: Any) -> Any:
        suffix = "/v1" if cls is OpenAILLM else ""
        options.setdefault("base_url", f"http://127.0.0.1:{server.server_port}{suffix}")
        options.setdefault("timeout", 5)
        client = cls(**options)
        client.retry_backoff = 0.0
        made.append(client)
        return client

    yield build
    for client in made:
        client.close()


class Answer(BaseModel):
    city: str
    score: float


ANSWER = {"city": "Berlin", "score": 0.5}
USER = [{"role": "user", "content": "Where?"}]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --- OpenAI-compatible ----------------------------------------------------------------


def test_openai_chat_request_and_reply(
    server: _Server, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_LLM_KEY", "sk-secret")
    llm = make(OpenAILLM, model="mini", api_key_env="MY_LLM_KEY")
    server.reply = "Berlin."
    assert isinstance(llm, LLM)
    assert llm.complete(USER, system="Be brief.", max_tokens=50, temperature=0.3) == "Berlin."
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == "Bearer sk-secret"
    assert sent["body"]["model"] == "mini"
    assert sent["body"]["messages"] == [{"role": "system", "content": "Be brief."}, *USER]
    assert sent["body"]["max_tokens"] == 50 and sent["body"]["temperature"] == 0.3
    assert "response_format" not in sent["body"]
    assert llm.model_id == f"openai:mini@http://127.0.0.1:{server.server_port}/v1"


def test_openai_local_server_needs_no_key(
    server: _Server, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    make(OpenAILLM, model="llama3").complete(USER)
    assert "authorization" not in server.requests[0]["headers"]


def test_openai_json_schema_is_sent_as_response_format(server: _Server, make: Make) -> None:
    server.reply = ANSWER
    schema = json_schema_for(Answer)
    text = make(OpenAILLM).complete(USER, json_schema=schema)
    assert parse_json_reply(text, Answer) == Answer(**ANSWER)
    fmt = server.requests[0]["body"]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"] == schema and fmt["json_schema"]["strict"] is False
    assert fmt["json_schema"]["name"]


def test_openai_falls_back_to_json_object(server: _Server, make: Make) -> None:
    server.reject_formats, server.reply = {"json_schema"}, ANSWER
    schema = json_schema_for(Answer)
    text = make(OpenAILLM).complete(USER, system="Find the city.", json_schema=schema)
    assert parse_json_reply(text, Answer).city == "Berlin"
    first, second = (r["body"] for r in server.requests)
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"] == {"type": "json_object"}
    system = second["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Find the city.")
    assert "JSON" in system["content"] and json.dumps(schema) in system["content"]


def test_openai_falls_back_to_no_response_format(server: _Server, make: Make) -> None:
    server.reject_formats = {"json_schema", "json_object"}
    server.reply = f"```json\n{json.dumps(ANSWER)}\n```"
    text = make(OpenAILLM).complete(USER, json_schema=json_schema_for(Answer))
    assert parse_json_reply(text, Answer).score == 0.5
    assert [r["body"].get("response_format", {}).get("type") for r in server.requests] == [
        "json_schema",
        "json_object",
        None,
    ]
    assert server.requests[2]["body"]["messages"][0]["role"] == "system"


def test_openai_renames_max_tokens_when_the_model_wants_it(server: _Server, make: Make) -> None:
    unsupported = "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead."
    server.script = [(400, {"error": {"message": unsupported}})]
    assert make(OpenAILLM, model="o3-mini").complete(USER, max_tokens=64) == "hi"
    assert server.requests[1]["body"]["max_completion_tokens"] == 64
    assert "max_tokens" not in server.requests[1]["body"]


def test_openai_retries_server_errors_then_succeeds(server: _Server, make: Make) -> None:
    server.script = [(500, {"error": {"message": "boom"}}), (429, {"error": {"message": "slow"}})]
    assert make(OpenAILLM, max_retries=2).complete(USER) == "hi"
    assert len(server.requests) == 3


def test_openai_gives_up_after_max_retries(server: _Server, make: Make) -> None:
    server.script = [(503, {"error": {"message": "overloaded"}})] * 3
    with pytest.raises(ProviderError, match="HTTP 503: overloaded") as info:
        make(OpenAILLM, max_retries=1).complete(USER)
    assert len(server.requests) == 2 and info.value.details["status"] == 503


def test_openai_malformed_reply_is_retried_then_fails(server: _Server, make: Make) -> None:
    server.script = [(200, b"<html>gateway</html>"), (200, {"choices": []})]
    with pytest.raises(ProviderError, match="invalid reply: no 'choices'") as info:
        make(OpenAILLM, max_retries=1).complete(USER)
    assert len(server.requests) == 2
    assert "base_url" in (info.value.hint or "")


def test_openai_401_is_a_clear_error(
    server: _Server, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_OPENAI_KEY", "sk-wrong-key")
    server.script = [(401, {"error": {"message": "Incorrect API key provided"}})]
    with pytest.raises(ProviderError) as info:
        make(OpenAILLM, api_key_env="TEAM_OPENAI_KEY").complete(USER)
    err = info.value
    assert len(server.requests) == 1  # not retried
    assert "HTTP 401" in err.message and "Incorrect API key" in err.message
    assert "TEAM_OPENAI_KEY" in (err.hint or "")
    assert "sk-wrong-key" not in str(err.to_dict())


def test_openai_refusal_and_cut_off_replies(server: _Server, make: Make) -> None:
    refusal = {"choices": [{"message": {"content": None, "refusal": "I can't help with that"}}]}
    cut = {"choices": [{"message": {"content": ""}, "finish_reason": "length"}]}
    server.script = [(200, refusal), (200, cut)]
    llm = make(OpenAILLM)
    with pytest.raises(ProviderError, match="refused: I can't help"):
        llm.complete(USER)
    with pytest.raises(ProviderError, match="cut off") as info:
        llm.complete(USER)
    assert "max_tokens" in (info.value.hint or "")
    assert len(server.requests) == 2  # neither is retried


def test_unreachable_server_names_the_url() -> None:
    port = _free_port()
    with OpenAILLM(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1) as llm:
        llm.retry_backoff = 0.0
        with pytest.raises(ProviderError) as info:
            llm.complete(USER)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    assert info.value.message == f"cannot reach the LLM at {url}: connection refused"
    assert "base_url" in (info.value.hint or "") and "running" in (info.value.hint or "")


def test_timeouts_are_provider_errors(server: _Server, make: Make) -> None:
    server.delay = 0.5
    with pytest.raises(ProviderError, match=r"did not answer within 0\.1 s"):
        make(OpenAILLM, timeout=0.1, max_retries=0).complete(USER)


def test_retry_after_is_waited_out_beyond_the_backoff_cap(
    server: _Server, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    monkeypatch.setattr("memloci.providers.http.time.sleep", waits.append)
    slow = {"error": {"message": "slow down"}}
    server.script = [(429, slow, {"Retry-After": "45"}), (429, slow, {"Retry-After": "2"})]
    client = make(OpenAILLM, max_retries=2)
    assert client.max_backoff < 45
    assert client.complete(USER) == "hi"
    assert waits == [45.0, 2.0] and len(server.requests) == 3


def test_a_retry_after_too_long_to_wait_fails_at_once(
    server: _Server, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    monkeypatch.setattr("memloci.providers.http.time.sleep", waits.append)
    server.script = [(429, {"error": {"message": "quota"}}, {"Retry-After": "3600"})]
    with pytest.raises(ProviderError, match="asks to retry in 3600 s") as info:
        make(OpenAILLM, max_retries=3).complete(USER)
    assert waits == [] and len(server.requests) == 1 and info.value.hint


def test_closing_the_client_cancels_the_request_without_retrying(
    server: _Server, make: Make
) -> None:
    """Ctrl-C in a chat closes the model's client under its request: that request is
    abandoned, not sent again on a fresh connection."""
    server.delay = 1.0
    client = make(OpenAILLM, max_retries=3)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            client.complete(USER)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    while not server.requests:
        time.sleep(0.01)
    client.close()
    worker.join(10)
    assert not worker.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], ProviderError)
    assert "cancelled" in str(outcome[0])
    time.sleep(1.2)  # a retry would have reached the server by now
    assert len(server.requests) == 1


def test_client_options_are_validated() -> None:
    with pytest.raises(ValidationError, match="base_url"):
        OpenAILLM(base_url="localhost:11434")
    with pytest.raises(ValidationError, match="timeout"):
        AnthropicLLM(timeout=0)
    with pytest.raises(ValidationError, match="max_retries"):
        OpenAILLM(max_retries=-1)
    with OpenAILLM() as llm, pytest.raises(ValidationError, match="messages"):
        llm.complete([{"content": "no role"}])


# --- Anthropic ------------------------------------------------------------------------


def test_anthropic_messages_request_and_reply(
    server: _Server, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-secret")
    llm = make(AnthropicLLM, model="claude-test")
    server.reply = "Berlin."
    chat = [{"role": "system", "content": "Use metric."}, *USER]
    assert llm.complete(chat, system="Be brief.", max_tokens=99) == "Berlin."
    sent = server.requests[0]
    assert sent["path"] == "/v1/messages"
    assert sent["headers"]["x-api-key"] == "ak-secret"
    assert sent["headers"]["anthropic-version"] == ANTHROPIC_VERSION
    assert sent["body"]["system"] == "Be brief.\n\nUse metric."
    assert sent["body"]["messages"] == USER and sent["body"]["max_tokens"] == 99
    assert "tools" not in sent["body"]
    assert isinstance(llm, LLM) and llm.model_id.startswith("anthropic:claude-test@")


def test_anthropic_schema_output_via_a_forced_tool(server: _Server, make: Make) -> None:
    server.reply = ANSWER
    schema = json_schema_for(Answer)
    text = make(AnthropicLLM).complete(USER, json_schema=schema)
    assert parse_json_reply(text, Answer) == Answer(**ANSWER)
    body = server.requests[0]["body"]
    assert body["tools"] == [
        {
            "name": "emit",
            "description": "Return the answer as structured data.",
            "input_schema": schema,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "emit"}


def test_anthropic_wraps_non_object_schemas(server: _Server, make: Make) -> None:
    server.reply = {"value": [1, 2, 3]}
    schema = {"type": "array", "items": {"type": "integer"}}
    text = make(AnthropicLLM).complete(USER, json_schema=schema)
    assert json.loads(text) == [1, 2, 3]
    tool_schema = server.requests[0]["body"]["tools"][0]["input_schema"]
    assert tool_schema["type"] == "object" and tool_schema["properties"]["value"] == schema


def test_anthropic_retries_overload_then_succeeds(server: _Server, make: Make) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.script = [(529, overloaded)]
    assert make(AnthropicLLM).complete(USER) == "hi"
    assert len(server.requests) == 2


def test_anthropic_auth_error_and_bad_reply(server: _Server, make: Make) -> None:
    invalid = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    server.script = [(401, invalid), (200, {"type": "message"}), (200, {"type": "message"})]
    llm = make(AnthropicLLM, max_retries=1)
    with pytest.raises(ProviderError, match="HTTP 401: bad key") as info:
        llm.complete(USER)
    assert "ANTHROPIC_API_KEY" in (info.value.hint or "")
    with pytest.raises(ProviderError, match="no 'content' blocks"):
        llm.complete(USER)
    assert len(server.requests) == 3


def test_anthropic_unreachable() -> None:
    port = _free_port()
    with (
        AnthropicLLM(base_url=f"http://127.0.0.1:{port}", max_retries=0) as llm,
        pytest.raises(ProviderError, match=rf"127\.0\.0\.1:{port}/v1/messages: connection"),
    ):
        llm.complete(USER)


# --- replies wrapped in prose, fences and <think> blocks --------------------------------

WRAPPED = [
    json.dumps(ANSWER),
    f"Sure! Here is the JSON you asked for: {json.dumps(ANSWER)} Let me know.",
    f"```json\n{json.dumps(ANSWER, indent=2)}\n```",
    f"<think>The user wants {{a city}}. [1] Maybe {{'x': 1}}?</think>\n{json.dumps(ANSWER)}",
    f"Reasoning about {{braces}} first.</think>```\n{json.dumps(ANSWER)}\n```",
    f'Note [see below] {{"other": true}} then {json.dumps(ANSWER)}',
]


@pytest.mark.parametrize("reply", WRAPPED)
def test_wrapped_replies_parse_through_a_real_client(
    server: _Server, make: Make, reply: str
) -> None:
    server.reply = reply
    text = make(OpenAILLM).complete(USER, json_schema=json_schema_for(Answer))
    assert parse_json_reply(text, Answer) == Answer(**ANSWER)


def test_parse_json_reply_arrays_and_errors() -> None:
    Numbers = RootModel[list[int]]
    assert parse_json_reply("The ids: [3, 4] done", Numbers).root == [3, 4]
    with pytest.raises(ProviderError, match="no JSON object found") as info:
        parse_json_reply("<think>{}</think>I could not decide.", Answer)
    assert "structured output" in (info.value.hint or "")
    with pytest.raises(ProviderError, match=r"JSON does not fit \(score: Field required\)"):
        parse_json_reply('{"city": "Oslo"}', Answer)
    with pytest.raises(ProviderError):
        parse_json_reply(None, Answer)  # type: ignore[arg-type]


def test_complete_json_repairs_once_then_fails(server: _Server, make: Make) -> None:
    llm = make(OpenAILLM)
    server.script = [
        (200, {"choices": [{"message": {"content": "Berlin, I think."}}]}),
        (200, {"choices": [{"message": {"content": json.dumps(ANSWER)}}]}),
    ]
    assert complete_json(llm, USER, Answer) == Answer(**ANSWER)
    repair = server.requests[1]["body"]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Berlin, I think."}
    assert "only the JSON" in repair[-1]["content"]
    server.requests.clear()
    server.reply = "Still no JSON."
    with pytest.raises(ProviderError, match="not valid JSON for Answer"):
        complete_json(llm, USER, Answer)
    assert len(server.requests) == 2


# --- registry -------------------------------------------------------------------------


def test_load_llm_by_name() -> None:
    assert load_llm("none") is None
    assert {"anthropic", "none", "openai"} <= set(llm_names())
    llm = load_llm("openai", model="m", base_url="http://localhost:11434/v1", max_retries=0)
    assert isinstance(llm, OpenAILLM) and llm.model_id == "openai:m@http://localhost:11434/v1"
    assert isinstance(load_llm("anthropic", api_key_env="NOPE"), AnthropicLLM)
    with pytest.raises(ValidationError, match="unknown llm 'gpt'") as info:
        load_llm("gpt")
    assert "openai" in (info.value.hint or "")
    with pytest.raises(ValidationError, match="bad llm_options") as info:
        load_llm("openai", temprature=0)
    assert "base_url" in (info.value.hint or "")


def test_register_llm_third_party() -> None:
    register_llm("my-gateway", "memloci.providers.openai_llm:OpenAILLM")
    try:
        llm = load_llm("my-gateway", model="gw", base_url="http://gateway.local/v1")
        assert isinstance(llm, OpenAILLM) and "my-gateway" in llm_names()
    finally:
        registry._LLMS.pop("my-gateway")


def test_an_example_quoted_before_the_answer_does_not_win() -> None:
    """The first JSON that fits used to win: "If nothing applies I answer {...}" gave an
    empty extraction and the session's facts were lost. Of the values standing on their
    own, the longest that fits is the answer, in either order."""
    answer = json.dumps(ANSWER)
    empty = json.dumps({**ANSWER, "city": "", "score": 0.0})
    for text in (
        f"If nothing applies I answer {empty}. Here: {answer}",
        f"{answer}\nFor an empty input I would have said {empty}.",
        f"```json\n{answer}\n```",
    ):
        assert parse_json_reply(text, Answer) == Answer(**ANSWER), text
    # a value inside another that does not fit is still found when nothing else fits
    assert parse_json_reply(f'{{"wrapper": {answer}}}', Answer) == Answer(**ANSWER)
