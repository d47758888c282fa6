"""OpenAI-compatible chat completions client (layer: providers).

``OpenAILLM`` calls ``POST {base_url}/chat/completions`` as spoken by OpenAI, Ollama
(``http://localhost:11434/v1``), vLLM, llama.cpp's server, LM Studio and others. With a
``json_schema`` it asks for schema-constrained output and, when a server rejects that,
falls back to ``json_object`` and then to plain text with the schema in the prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from memloci.errors import ProviderError
from memloci.providers.llm import BadReply, BaseHTTPLLM, check_messages, cut_off

_FORMAT_WORDS = ("response_format", "response format", "json_schema", "json_object")
_MAX_FALLBACKS = 4
R = TypeVar("R")


class OpenAILLM(BaseHTTPLLM):
    """Chat completions from any OpenAI-compatible ``/v1`` endpoint.

    Options: ``model``, ``base_url`` (up to and including ``/v1``), ``api_key`` (default:
    the ``api_key_env`` variable, read when the client is built; local servers need
    none), ``timeout`` (seconds per request) and ``max_retries`` (extra attempts after
    connection errors, timeouts, 429, 5xx and malformed replies).
    """

    provider = "openai"

    def __init__(
        self,
        *,
        model: str = "gpt-4o-mini",
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60,
        max_retries: int = 2,
    ) -> None:
        super().__init__(
            model=model,
            base_url=base_url,
            api_key=api_key,
            api_key_env=api_key_env,
            timeout=timeout,
            max_retries=max_retries,
        )

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        system: str | None = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> str:
        """The assistant's reply to ``messages`` (text; JSON when ``json_schema`` is set)."""
        chat = check_messages(messages)
        if system:
            chat.insert(0, {"role": "system", "content": system})
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": chat,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if json_schema is not None:
            name = re.sub(r"[^A-Za-z0-9_-]", "_", str(json_schema.get("title", "reply")))[:64]
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name or "reply", "schema": json_schema, "strict": False},
            }
        structured = json_schema is not None

        def parse(body: Any) -> str:
            return _content(body, structured=structured)

        return self._post_adapting(payload, parse, json_schema)

    def _post_adapting(
        self, payload: dict[str, Any], parse: Callable[[Any], R], schema: dict[str, Any] | None
    ) -> R:
        """POST to ``/chat/completions``; when the server refuses a parameter, adapt
        ``payload`` (see :func:`_downgrade`) and try again, up to ``_MAX_FALLBACKS`` times."""
        url = f"{self.base_url}/chat/completions"
        fallbacks = 0
        while True:
            try:
                return self._post(url, payload, parse)
            except ProviderError as exc:
                if fallbacks >= _MAX_FALLBACKS or not _downgrade(payload, exc, schema):
                    raise
                fallbacks += 1


def _downgrade(payload: dict[str, Any], exc: ProviderError, schema: dict[str, Any] | None) -> bool:
    """Adapt ``payload`` to a server that refused a parameter; False if nothing to try."""
    if exc.details.get("status") not in (400, 422):
        return False
    text = exc.message.lower()
    fmt = payload.get("response_format")
    if fmt is not None and any(word in text for word in _FORMAT_WORDS):
        if fmt["type"] == "json_schema":
            payload["response_format"] = {"type": "json_object"}
            _schema_in_prompt(payload["messages"], schema)
        else:
            del payload["response_format"]
        return True
    if "max_completion_tokens" in text and "max_tokens" in payload:
        payload["max_completion_tokens"] = payload.pop("max_tokens")
        return True
    if "temperature" in text and "temperature" in payload:
        del payload["temperature"]
        return True
    return False


def _schema_in_prompt(chat: list[dict[str, Any]], schema: dict[str, Any] | None) -> None:
    """Without server-side schemas the model must read the schema (and the word JSON)."""
    note = "Reply with only a JSON value matching this JSON schema:\n" + json.dumps(schema)
    if chat and chat[0]["role"] == "system" and isinstance(chat[0]["content"], str):
        chat[0] = {"role": "system", "content": f"{chat[0]['content']}\n\n{note}"}
    else:
        chat.insert(0, {"role": "system", "content": note})


def first_message(body: Any) -> tuple[dict[str, Any], str, Any]:
    """A chat-completions reply's first message, its text (content parts joined) and
    its ``finish_reason``; :class:`BadReply` when malformed, ``ProviderError`` when the
    model refused."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadReply("no 'choices' in the reply")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise BadReply("no 'message' in the first choice")
    if message.get("refusal"):
        raise ProviderError(
            f"the model refused: {str(message['refusal'])[:200]}",
            hint="rephrase the request or use another model",
        )
    content = message.get("content")
    if isinstance(content, list):  # some servers send content parts
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    if content is not None and not isinstance(content, str):
        raise BadReply("the message content is not text")
    return message, content or "", choices[0].get("finish_reason")


def _content(body: Any, *, structured: bool = False) -> str:
    """The reply's text; a cut-off ``ProviderError`` when ``max_tokens`` stopped it before
    any answer or, for JSON (``structured``), before the JSON value was closed (its
    inner objects could otherwise pass for the answer)."""
    _, content, finish = first_message(body)
    if finish == "length":
        text = content.strip()
        if not text:
            raise cut_off("finish_reason 'length'", partial=False)
        if structured and not text.endswith(("}", "]", "```")):
            raise cut_off("finish_reason 'length'", partial=True)
    return content


__all__ = ["OpenAILLM", "first_message"]
