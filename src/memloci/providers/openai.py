"""OpenAI-compatible embeddings client (layer: providers).

``OpenAIEmbedder`` calls ``POST {base_url}/embeddings`` as spoken by OpenAI, Ollama
(``http://localhost:11434/v1``), vLLM, LM Studio and others. Vectors are returned as
unit-length float32. Every failure (unreachable server, timeout, HTTP error, malformed
reply) surfaces as a ``ProviderError`` with a hint; the API key never appears in it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memloci.errors import ProviderError, ValidationError
from memloci.providers.http import BadReply, HTTPClient, Wording

F32 = npt.NDArray[np.float32]
_PROBE_TEXT = "dimension probe"
_WORDING = Wording(
    where="embedding endpoint {url}",
    timed_out="embedding request to {url} timed out after {timeout:g} s",
    timed_out_hint="check the server, or raise timeout= / lower batch_size=",
    unreachable="cannot reach the embedding endpoint {url}: {error}",
    unreachable_hint="is the server running? check base_url (it should end in /v1)",
    invalid_hint="make sure base_url points at an OpenAI-compatible /v1 API",
    auth_hint="check the API key (api_key= or the {api_key_env} variable)",
    not_found_hint="check base_url (it should end in /v1) and that model {model!r} exists",
    rate_limited_hint="rate limited: wait, lower batch_size=, or raise retries=",
    server_failed_hint="the embedding server failed; retry later or check its logs",
    rejected_hint="the server rejected the request; check model and input texts",
    base_url_hint="e.g. https://api.openai.com/v1 or http://localhost:11434/v1",
    retries_option="retries",
)


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"{name} must be a positive integer, got {value!r}")
    return value


class OpenAIEmbedder(HTTPClient):
    """Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint.

    Options: ``model``, ``base_url`` (up to and including ``/v1``), ``api_key`` (default:
    the ``api_key_env`` environment variable, read when the embedder is built; servers
    such as Ollama need none), ``dimension`` (default: found by embedding a probe text
    on first use; sent as ``dimensions`` to OpenAI's text-embedding-3 models),
    ``timeout`` (seconds per request), ``batch_size`` (texts per request) and
    ``retries`` (extra attempts after connection errors, timeouts, 429 and 5xx replies).
    """

    provider = "openai"
    wording = _WORDING
    # 2xx replies that do not parse fail at once; no Retry-After, no backoff cap
    retry_bad_replies = False
    honour_retry_after = False
    max_backoff = math.inf

    def __init__(
        self,
        *,
        model: str = "text-embedding-3-small",
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        dimension: int | None = None,
        timeout: float = 30,
        batch_size: int = 128,
        retries: int = 2,
    ) -> None:
        super().__init__(
            model=model,
            base_url=base_url,
            api_key=api_key,
            api_key_env=api_key_env,
            timeout=timeout,
            max_retries=retries,
        )
        self._dimension = None if dimension is None else _positive_int("dimension", dimension)
        self._batch_size = _positive_int("batch_size", batch_size)

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._request([_PROBE_TEXT])  # sets the dimension from the reply
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> F32:
        """Embed a batch; returns shape (len(texts), dimension), unit-length rows."""
        if isinstance(texts, str):
            raise ValidationError(
                "embed() takes a sequence of strings, not a single string",
                hint="wrap it in a list, or use embed_query() for one text",
            )
        items = list(texts)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise ValidationError(f"texts[{i}] is a {type(item).__name__}, not a string")
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._request(items[i : i + self._batch_size])
            for i in range(0, len(items), self._batch_size)
        ]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def embed_query(self, text: str) -> F32:
        """Embed one query; returns shape (dimension,)."""
        if not isinstance(text, str):
            raise ValidationError(f"query must be a string, got {type(text).__name__}")
        vector: F32 = self._request([text])[0]
        return vector

    # --- HTTP ----------------------------------------------------------------------

    def _request(self, batch: list[str]) -> F32:
        # OpenAI rejects empty strings; a single space embeds "nothing" as well.
        payload: dict[str, Any] = {"model": self.model, "input": [t or " " for t in batch]}
        if self._dimension is not None and self.model.startswith("text-embedding-3"):
            payload["dimensions"] = self._dimension  # these models can shorten vectors
        url = f"{self.base_url}/embeddings"
        return self._post(url, payload, lambda body: self._parse(body, len(batch)))

    def _parse(self, body: Any, count: int) -> F32:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != count:
            raise BadReply(f"expected a 'data' list of {count} embeddings")
        rows: list[Any] = [None] * count
        for pos, item in enumerate(data):
            index = item.get("index", pos) if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or rows[index] is not None:
                raise BadReply("missing or duplicate 'index' values")
            rows[index] = item.get("embedding")
        return self._unit_rows(rows)

    def _unit_rows(self, rows: list[Any]) -> F32:
        """The reply's vectors as unit-length float32 rows: :class:`BadReply` unless they
        are equal-length lists of finite numbers, none all zeros; the first reply sets
        the dimension, a later one of another size is a ``ProviderError``."""
        try:
            matrix = np.array(rows, dtype=np.float64)
        except (TypeError, ValueError):
            raise BadReply("embeddings are not equal-length lists of numbers") from None
        if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
            raise BadReply("embeddings are not equal-length lists of finite numbers")
        norms = np.linalg.norm(matrix, axis=1)
        if not (norms > 0).all():
            raise BadReply("an embedding is all zeros")
        dim = matrix.shape[1]
        if self._dimension is None:
            self._dimension = dim
        elif dim != self._dimension:
            raise ProviderError(
                f"model {self.model!r} returned {dim}-d vectors, expected {self._dimension}",
                hint="set dimension= to the model's size (or leave it unset to detect it)",
            )
        unit: F32 = (matrix / norms[:, None]).astype(np.float32)
        return unit


__all__ = ["OpenAIEmbedder"]
