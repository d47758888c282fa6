"""The LLM protocol, its registry and reply parsing (layer: providers).

An ``LLM`` turns chat messages into text, synchronously (callers run it in a worker
thread). ``load_llm(name, **options)`` builds one by name, importing the client module
only when chosen; ``"none"`` gives ``None``. :class:`BaseHTTPLLM` (on
:class:`~memloci.providers.http.HTTPClient`) holds the HTTP, retry and error rules the
built-in clients share; :func:`parse_json_reply` turns a model's reply into a validated
pydantic model however the model wrapped the JSON.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memloci.errors import ProviderError, ValidationError
from memloci.providers.base import registered
from memloci.providers.http import RETRY_STATUS, BadReply, HTTPClient, server_message

T = TypeVar("T", bound=BaseModel)
JsonSchema = dict[str, Any]


@runtime_checkable
class LLM(Protocol):
    """A chat model. ``complete`` returns the reply text; with ``json_schema`` the
    provider is asked for JSON matching it (the text is then JSON, still to be checked
    with :func:`parse_json_reply`). Failures raise ``ProviderError``."""

    @property
    def model_id(self) -> str: ...

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        system: str | None = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.0,
    ) -> str: ...


# name -> "module:factory"; factories take keyword options and return an LLM.
_LLMS: dict[str, str] = {
    "openai": "memloci.providers.openai_llm:OpenAILLM",
    "anthropic": "memloci.providers.anthropic:AnthropicLLM",
}


def register_llm(name: str, target: str) -> None:
    """Register an LLM factory as ``"module:attribute"`` (imported lazily)."""
    _LLMS[name] = target


def llm_names() -> list[str]:
    """Names of the known LLM clients (plus ``none``)."""
    return sorted([*_LLMS, "none"])


def load_llm(name: str, **options: Any) -> LLM | None:
    """Build the LLM client registered under ``name``; ``"none"`` → ``None``."""
    if name == "none":
        return None
    choices = ", ".join(llm_names())
    factory: Callable[..., LLM] = registered(_LLMS, name, kind="llm", choices=choices)
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as exc:
        params = [p for p in inspect.signature(factory).parameters if p != "self"]
        raise ValidationError(
            f"bad llm_options for {name!r}: {exc}", hint=f"known options: {', '.join(params)}"
        ) from None
    return factory(**options)


# --- reply parsing ---------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<(think|thinking)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_END = re.compile(r"</(?:think|thinking)>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking)>", re.IGNORECASE)
_MAX_CANDIDATES = 50


def strip_think(text: str) -> str:
    """``text`` without ``<think>…</think>`` blocks (and anything before a lone
    closing tag, as some servers drop the opening one, or after a lone opening tag: a
    reply cut off at ``max_tokens`` while the model was still thinking)."""
    text = _THINK_BLOCK.sub("", text)
    text = _THINK_END.split(text)[-1]
    unclosed = _THINK_OPEN.search(text)
    return (text[: unclosed.start()] if unclosed else text).strip()


def parse_json_reply(text: str, model: type[T]) -> T:
    """The JSON object/array in ``text`` that validates as ``model``: of the values that
    stand on their own in the reply (not inside another), the longest that fits — so an
    example the model quotes first ("if nothing applies I answer ``{"facts": []}``. Here:
    ``{…}``") never wins over its answer; when none fits, the first value inside one that
    does.

    Tolerates prose around the JSON, markdown fences and ``<think>`` blocks. Raises
    ``ProviderError`` (with a hint) when no JSON value in the reply fits ``model``.
    """
    if not isinstance(text, str):
        raise ProviderError(f"the LLM reply is a {type(text).__name__}, not text")
    body = strip_think(text)
    decoder = json.JSONDecoder()
    first_error: str | None = None
    tried = 0
    best: tuple[int, T] | None = None  # (length in the reply, the value) of the top ones
    nested: T | None = None
    end = 0  # where the last value standing on its own ended
    for match in re.finditer(r"[\[{]", body):
        if tried >= _MAX_CANDIDATES:
            break
        try:
            value, stop = decoder.raw_decode(body, match.start())
        except ValueError:
            continue
        tried += 1
        top = match.start() >= end
        try:
            fits = model.model_validate(value)
        except PydanticValidationError as exc:
            if first_error is None:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"]) or "top level"
                first_error = f"{where}: {err['msg']}"
        else:
            if top and (best is None or stop - match.start() >= best[0]):
                best = (stop - match.start(), fits)
            elif not top and nested is None:
                nested = fits
        if top:
            end = stop
    if best is not None:
        return best[1]
    if nested is not None:
        return nested
    why = f"JSON does not fit ({first_error})" if first_error else "no JSON object found"
    raise ProviderError(
        f"the LLM reply is not valid JSON for {model.__name__}: {why}",
        hint="use a model that follows JSON instructions or supports structured output; "
        "raise max_tokens if replies are cut off",
        excerpt=body[:200],
    )


def complete_json(
    llm: LLM,
    messages: list[dict[str, Any]],
    model: type[T],
    *,
    system: str | None = None,
    schema: JsonSchema | None = None,
    max_tokens: int = 2048,
    repairs: int = 1,
) -> T:
    """Ask ``llm`` for JSON fitting ``model`` (schema-constrained where the provider
    can) and parse it. A reply that does not parse is sent back with a request to fix
    it, up to ``repairs`` times; then the ``ProviderError`` from parsing is raised."""
    schema = schema if schema is not None else json_schema_for(model)
    chat = list(messages)
    while True:
        reply = llm.complete(chat, system=system, json_schema=schema, max_tokens=max_tokens)
        try:
            return parse_json_reply(reply, model)
        except ProviderError as exc:
            if repairs <= 0:
                raise
            repairs -= 1
            chat = [
                *messages,
                {"role": "assistant", "content": reply[:4000] or "(empty)"},
                {
                    "role": "user",
                    "content": f"That reply could not be used ({exc.message}). Answer again "
                    "with only the JSON value matching the schema, no other text.",
                },
            ]


def json_schema_for(model: type[BaseModel]) -> JsonSchema:
    """``model``'s JSON schema, self-contained: ``$ref``s inlined, titles dropped."""
    raw = model.model_json_schema()
    defs: dict[str, JsonSchema] = raw.pop("$defs", {})

    def clean(node: Any) -> Any:
        if isinstance(node, list):
            return [clean(n) for n in node]
        if not isinstance(node, dict):
            return node
        node = dict(node)
        if "$ref" in node:
            target = copy.deepcopy(defs[node.pop("$ref").rsplit("/", 1)[-1]])
            node = {**target, **node}
        node.pop("title", None)
        literal = ("enum", "default", "const")
        return {k: v if k in literal else clean(v) for k, v in node.items()}

    out: JsonSchema = clean(raw)
    return out


def cut_off(reason: str, *, partial: bool) -> ProviderError:
    """The ``ProviderError`` for a reply that hit ``max_tokens`` (``reason``: the
    provider's word for it); ``partial`` when some of the answer came, none otherwise.
    ``details["cut_off"]`` lets callers ask for less at a time (see :func:`is_cut_off`)."""
    what = "in the middle of its answer" if partial else "before any answer"
    return ProviderError(
        f"the LLM reply was cut off {what} ({reason})",
        hint="raise max_tokens (reasoning models spend tokens on thinking first)",
        cut_off=True,
    )


def is_cut_off(exc: BaseException) -> bool:
    """Whether ``exc`` is a reply cut off at ``max_tokens`` (see :func:`cut_off`)."""
    return isinstance(exc, ProviderError) and exc.details.get("cut_off") is True


# --- the built-in clients' base --------------------------------------------------------


def check_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of chat messages, each a mapping with a string ``role`` and a ``content``."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ValidationError("messages must be a list of {'role': …, 'content': …} dicts")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ValidationError(f"messages[{i}] needs a string 'role' and a 'content'")
        if "content" not in message:
            raise ValidationError(f"messages[{i}] has no 'content'")
        out.append(dict(message))
    if not out:
        raise ValidationError("messages is empty")
    return out


class BaseHTTPLLM(HTTPClient):
    """HTTP plumbing shared by the built-in clients (see :class:`HTTPClient`): one pooled
    ``httpx.Client``, retries with exponential backoff on connection errors, timeouts,
    429, 5xx and malformed replies, and ``ProviderError``s with hints (never the API key)."""

    provider: ClassVar[str] = "llm"
    retry_status: ClassVar[frozenset[int]] = RETRY_STATUS | {529}  # 529: Anthropic overloaded


__all__ = [
    "LLM",
    "BadReply",
    "BaseHTTPLLM",
    "check_messages",
    "complete_json",
    "cut_off",
    "is_cut_off",
    "json_schema_for",
    "llm_names",
    "load_llm",
    "parse_json_reply",
    "register_llm",
    "server_message",
    "strip_think",
]
