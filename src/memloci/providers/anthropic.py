"""Anthropic Messages API client (layer: providers).

``AnthropicLLM`` calls ``POST {base_url}/v1/messages``. The system prompt travels as the
top-level ``system`` field; schema-constrained output uses one forced tool (``emit``)
whose input is returned as JSON text.
"""

from __future__ import annotations

import json
from typing import Any

from memloci.errors import ProviderError
from memloci.providers.llm import BadReply, BaseHTTPLLM, check_messages, cut_off

ANTHROPIC_VERSION = "2023-06-01"
_TOOL = "emit"
_WRAP = "value"  # tool inputs must be objects; other schemas are wrapped in {"value": …}


class AnthropicLLM(BaseHTTPLLM):
    """Claude models through the Messages API.

    Options: ``model``, ``base_url`` (default ``https://api.anthropic.com``), ``api_key``
    (default: the ``api_key_env`` variable, read when the client is built), ``timeout``
    (seconds per request) and ``max_retries`` (extra attempts after connection errors,
    timeouts, 429, 5xx/529 and malformed replies).
    """

    provider = "anthropic"

    def __init__(
        self,
        *,
        model: str = "claude-haiku-4-5",
        base_url: str = "https://api.anthropic.com",
        api_key: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
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

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

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
        chat, systems = [], [system] if system else []
        for message in check_messages(messages):
            if message["role"] == "system":  # Anthropic takes these only at the top level
                systems.append(str(message["content"]))
            else:
                chat.append(message)
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "messages": chat,
        }
        if systems:
            payload["system"] = "\n\n".join(systems)
        wrapped = json_schema is not None and json_schema.get("type") != "object"
        if json_schema is not None:
            schema = (
                {"type": "object", "properties": {_WRAP: json_schema}, "required": [_WRAP]}
                if wrapped
                else json_schema
            )
            payload["tools"] = [
                {
                    "name": _TOOL,
                    "description": "Return the answer as structured data.",
                    "input_schema": schema,
                }
            ]
            payload["tool_choice"] = {"type": "tool", "name": _TOOL}

        def parse(body: Any) -> str:
            return _reply(body, tool=json_schema is not None, wrapped=wrapped)

        return self._post(f"{self.base_url}/v1/messages", payload, parse)


def _reply(body: Any, *, tool: bool, wrapped: bool) -> str:
    blocks = body.get("content") if isinstance(body, dict) else None
    if not isinstance(blocks, list):
        raise BadReply("no 'content' blocks in the reply")
    stop = body.get("stop_reason")
    if stop == "refusal":
        texts = [b for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        said = " ".join(str(b.get("text", "")) for b in texts).strip()
        raise ProviderError(
            f"the model refused{': ' + said[:200] if said else ''}",
            hint="rephrase the request or use another model",
        )
    if tool:
        if stop == "max_tokens":  # the tool input holds only what came before the cut
            raise cut_off("stop_reason 'max_tokens'", partial=True)
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                data = block.get("input")
                if wrapped and isinstance(data, dict):
                    data = data.get(_WRAP)
                return json.dumps(data)
    text = "".join(
        str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    )
    if not text.strip() and stop == "max_tokens":
        raise cut_off("stop_reason 'max_tokens'", partial=False)
    return text


__all__ = ["ANTHROPIC_VERSION", "AnthropicLLM"]
