"""Chat with tool calling (layer: providers): one call, both wire protocols.

A :class:`ChatModel` takes protocol-neutral messages and tool specs and returns a
:class:`ChatTurn` (the reply text and the tool calls the model asked for)::

    {"role": "user", "content": "Remember that Alec is my boss"}
    {"role": "assistant", "content": "", "tool_calls": [ToolCall(id, name, arguments)]}
    {"role": "tool", "tool_call_id": id, "name": name, "content": "Remembered …",
     "is_error": False}

Tool specs are ``{"name", "description", "parameters"}`` (a JSON schema). They go on
the wire exactly as :meth:`memloci.tools.ToolDef.openai` and
:meth:`~memloci.tools.ToolDef.anthropic` render them:

* OpenAI chat completions: ``tools=[{"type": "function", "function": {…}}]``; the
  reply's ``message.tool_calls``; results as ``{"role": "tool", "tool_call_id", …}``.
* Anthropic messages: ``tools=[{"name", "description", "input_schema"}]``; ``tool_use``
  content blocks; results as one user message of ``tool_result`` blocks.

:class:`OpenAIChat` and :class:`AnthropicChat` extend the plain clients (so they also
``complete()``) and share their retries and :class:`~memloci.errors.ProviderError` s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from memloci.errors import ProviderError, ValidationError
from memloci.providers.anthropic import AnthropicLLM
from memloci.providers.llm import BadReply
from memloci.providers.openai_llm import OpenAILLM, first_message

CHAT_PROVIDERS = ("openai", "anthropic")
_NO_TOOLS_HINT = "this model or server does not support tool calling; choose a model that does"
Json = dict[str, Any]
Messages = Sequence[Mapping[str, Any]]
Specs = Sequence[Mapping[str, Any]]  # tool specs


@dataclass(frozen=True)
class ToolCall:
    """A tool the model asked to run: ``arguments`` is the JSON object text it sent."""

    id: str
    name: str
    arguments: str = "{}"

    def input(self) -> dict[str, Any]:
        """The arguments as a mapping (``{}`` when they are not a JSON object)."""
        try:
            data = json.loads(self.arguments) if self.arguments.strip() else {}
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class ChatTurn:
    """One model reply: its text (may be empty when it only calls tools) and tool calls."""

    text: str
    tool_calls: tuple[ToolCall, ...] = field(default_factory=tuple)
    stop_reason: str | None = None


@runtime_checkable
class ChatModel(Protocol):
    """A chat model that can call tools. Failures raise ``ProviderError``."""

    @property
    def model_id(self) -> str: ...

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        max_tokens: int = 1024,
        temperature: float = 0.7,
    ) -> ChatTurn: ...


def load_chat_model(provider: str, **options: Any) -> OpenAIChat | AnthropicChat:
    """:class:`OpenAIChat` (any OpenAI-compatible endpoint) or :class:`AnthropicChat`;
    ``options`` as for the plain clients (``model``, ``base_url``, ``api_key``,
    ``api_key_env``, ``timeout``, ``max_retries``), plus ``system_as_user``: send the
    system prompt as the first user message, for servers that ignore the system role."""
    as_user = options.pop("system_as_user", False)
    model: OpenAIChat | AnthropicChat | None = None
    if provider == "openai":
        model = OpenAIChat(**options)
    elif provider == "anthropic":
        model = AnthropicChat(**options)
    if model is not None:
        model.system_as_user = as_user is True
        return model
    raise ValidationError(
        f"unknown chat provider {provider!r}", hint=f"choose one of: {', '.join(CHAT_PROVIDERS)}"
    )


def _check(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence) or not messages:
        raise ValidationError("messages must be a non-empty list of {'role', 'content'} dicts")
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping) or msg.get("role") not in ("user", "assistant", "tool"):
            raise ValidationError(f"messages[{i}] needs a role of user, assistant or tool")
    return list(messages)


def _text(msg: Mapping[str, Any]) -> str:
    content = msg.get("content")
    return content if isinstance(content, str) else "" if content is None else str(content)


# ---------------------------------------------------------------------- OpenAI
def openai_messages(
    messages: Sequence[Mapping[str, Any]], system: str | None = None
) -> list[dict[str, Any]]:
    """Neutral messages → chat-completions ``messages`` (system first)."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for msg in _check(messages):
        role = msg["role"]
        if role == "tool":
            out.append({"role": "tool", "tool_call_id": msg["tool_call_id"], "content": _text(msg)})
        elif role == "assistant" and msg.get("tool_calls"):
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in msg["tool_calls"]
            ]
            out.append({"role": "assistant", "content": _text(msg) or None, "tool_calls": calls})
        else:
            out.append({"role": role, "content": _text(msg)})
    return out


def openai_tool_entries(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tool specs → ``[{"type": "function", "function": {name, description, parameters}}]``."""
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t["description"],
                "parameters": t["parameters"],
            },
        }
        for t in tools
    ]


def parse_openai_turn(body: Any) -> ChatTurn:
    """A chat-completions reply → :class:`ChatTurn`; :class:`BadReply` when malformed."""
    message, text, finish = first_message(body)
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise BadReply("'tool_calls' is not a list")
    calls = []
    for n, raw in enumerate(raw_calls):
        fn = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise BadReply(f"tool call {n} has no function name")
        args = fn.get("arguments")
        args = json.dumps(args) if isinstance(args, dict) else str(args or "{}")
        calls.append(ToolCall(str(raw.get("id") or f"call_{n}"), fn["name"], args))
    if not calls and not text.strip() and finish == "length":
        raise ProviderError(
            "the LLM reply was cut off before any answer (finish_reason 'length')",
            hint="raise model.max_tokens (reasoning models spend tokens on thinking first)",
        )
    return ChatTurn(text, tuple(calls), finish if isinstance(finish, str) else None)


class _ToolChat:
    """:meth:`chat` for a client whose :meth:`_turn` sends one chat request."""

    model: str
    system_as_user: bool = False  # the system prompt goes as the first user message

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        max_tokens: int = 1024,
        temperature: float = 0.7,
    ) -> ChatTurn:
        """The model's next turn: text, or tool calls to run and send back."""
        payload: Json = {"model": self.model, "max_tokens": max_tokens, "temperature": temperature}
        if self.system_as_user and system:
            messages, system = [{"role": "user", "content": system}, *messages], None
        try:
            return self._turn(payload, messages, system, tools)
        except ProviderError as exc:
            raise _tools_hint(exc, bool(tools)) from None

    def _turn(
        self, payload: Json, messages: Messages, system: str | None, tools: Specs
    ) -> ChatTurn:
        """Complete ``payload`` (model and sampling so far) with the messages, system
        prompt and tools in the provider's form, and POST it."""
        raise NotImplementedError


def _tools_hint(exc: ProviderError, with_tools: bool) -> ProviderError:
    """A 400 that blames tools gets a hint saying so."""
    status = exc.details.get("status")
    if with_tools and status in (400, 422) and "tool" in exc.message.lower():
        return ProviderError(exc.message, hint=_NO_TOOLS_HINT, status=status)
    return exc


class OpenAIChat(_ToolChat, OpenAILLM):
    """:class:`~memloci.providers.openai_llm.OpenAILLM` with tool calling (:meth:`chat`)."""

    def _turn(
        self, payload: Json, messages: Messages, system: str | None, tools: Specs
    ) -> ChatTurn:
        payload["messages"] = openai_messages(messages, system)
        if tools:
            payload["tools"] = openai_tool_entries(tools)
        return self._post_adapting(payload, parse_openai_turn, None)


# ---------------------------------------------------------------------- Anthropic
def anthropic_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Neutral messages → Messages-API ``messages``: tool calls become ``tool_use``
    blocks, results ``tool_result`` blocks in a user message, and neighbouring messages
    of one role are merged (the API wants user and assistant to alternate)."""
    out: list[dict[str, Any]] = []
    for msg in _check(messages):
        role, blocks = msg["role"], []
        if role == "tool":
            role = "user"
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": msg["tool_call_id"],
                "content": _text(msg),
            }
            if msg.get("is_error"):
                result["is_error"] = True
            blocks.append(result)
        else:
            if _text(msg):
                blocks.append({"type": "text", "text": _text(msg)})
            calls = (msg.get("tool_calls") or ()) if role == "assistant" else ()
            for call in calls:
                blocks.append(
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input()}
                )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for msg in out:  # tool results come first in their user message, as the API asks
        msg["content"].sort(key=lambda b: b["type"] != "tool_result")
    return out


def anthropic_tool_entries(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tool specs → ``[{"name", "description", "input_schema"}]``."""
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
        for t in tools
    ]


def parse_anthropic_turn(body: Any) -> ChatTurn:
    """A Messages-API reply → :class:`ChatTurn`; :class:`BadReply` when malformed."""
    blocks = body.get("content") if isinstance(body, dict) else None
    if not isinstance(blocks, list):
        raise BadReply("no 'content' blocks in the reply")
    texts, calls = [], []
    for n, block in enumerate(b for b in blocks if isinstance(b, dict)):
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            if not isinstance(block.get("name"), str):
                raise BadReply(f"tool_use block {n} has no name")
            data = block.get("input")
            args = json.dumps(data if data is not None else {})
            calls.append(ToolCall(str(block.get("id") or f"toolu_{n}"), block["name"], args))
    stop = body.get("stop_reason")
    text = "".join(texts)
    if not calls and not text.strip() and stop == "max_tokens":
        raise ProviderError(
            "the LLM reply was cut off before any answer (stop_reason 'max_tokens')",
            hint="raise model.max_tokens",
        )
    return ChatTurn(text, tuple(calls), stop if isinstance(stop, str) else None)


class AnthropicChat(_ToolChat, AnthropicLLM):
    """:class:`~memloci.providers.anthropic.AnthropicLLM` with tool calling (:meth:`chat`)."""

    def _turn(
        self, payload: Json, messages: Messages, system: str | None, tools: Specs
    ) -> ChatTurn:
        payload["messages"] = anthropic_messages(messages)
        if system:
            payload["system"] = system
        if tools:
            payload["tools"] = anthropic_tool_entries(tools)
        return self._post(f"{self.base_url}/v1/messages", payload, parse_anthropic_turn)


__all__ = [
    "CHAT_PROVIDERS",
    "AnthropicChat",
    "ChatModel",
    "ChatTurn",
    "OpenAIChat",
    "ToolCall",
    "anthropic_messages",
    "anthropic_tool_entries",
    "load_chat_model",
    "openai_messages",
    "openai_tool_entries",
    "parse_anthropic_turn",
    "parse_openai_turn",
]
