"""OpenAI-compatible embeddings client (layer: providers).

``OpenAIEmbedder`` calls ``POST {base_url}/embeddings`` as spoken by OpenAI, Ollama
(``http://localhost:11434/v1``), vLLM, LM Studio and others. Vectors are returned as
unit-length float32. Every failure (unreachable server, timeout, HTTP error, malformed
reply) surfaces as a ``ProviderError`` with a hint; the API key never appears in it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from memloci.errors import ProviderError, ValidationError

F32 = npt.NDArray[np.float32]
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_PROBE_TEXT = "dimension probe"


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"{name} must be a positive integer, got {value!r}")
    return value


def _server_message(response: httpx.Response) -> str:
    """The error text an OpenAI-style server put in its body (short, best effort)."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
    else:
        error = body.get("error", body) if isinstance(body, dict) else body
        text = str(error.get("message", error) if isinstance(error, dict) else error)
    return text[:300]


class OpenAIEmbedder:
    """Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint.

    Options: ``model``, ``base_url`` (up to and including ``/v1``), ``api_key`` (default:
    the ``api_key_env`` environment variable, read when the embedder is built; servers
    such as Ollama need none), ``dimension`` (default: found by embedding a probe text
    on first use; sent as ``dimensions`` to OpenAI's text-embedding-3 models),
    ``timeout`` (seconds per request), ``batch_size`` (texts per request) and
    ``retries`` (extra attempts after connection errors, timeouts, 429 and 5xx replies).
    """

    retry_backoff: float = 0.5  # seconds before the first retry; doubles each time

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
        if not isinstance(model, str) or not model:
            raise ValidationError("model must be a non-empty string")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValidationError(
                f"base_url must be an http(s) URL, got {base_url!r}",
                hint="e.g. https://api.openai.com/v1 or http://localhost:11434/v1",
            )
        if dimension is not None:
            _positive_int("dimension", dimension)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValidationError(f"timeout must be a positive number, got {timeout!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValidationError(f"retries must be a non-negative integer, got {retries!r}")
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env) or None
        self._api_key_env = api_key_env
        self._dimension = dimension
        self._timeout = float(timeout)
        self._batch_size = _positive_int("batch_size", batch_size)
        self._retries = retries
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}@{self._base_url}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._request([_PROBE_TEXT])  # sets the dimension from the reply
        assert self._dimension is not None
        return self._dimension

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self._model!r}, base_url={self._base_url!r})"

    def close(self) -> None:
        """Close the HTTP connection pool (the embedder reopens it when used again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                headers = {"Accept": "application/json"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(timeout=self._timeout, headers=headers)
            return self._client

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
        url = f"{self._base_url}/embeddings"
        # OpenAI rejects empty strings; a single space embeds "nothing" as well.
        payload: dict[str, Any] = {"model": self._model, "input": [t or " " for t in batch]}
        if self._dimension is not None and self._model.startswith("text-embedding-3"):
            payload["dimensions"] = self._dimension  # these models can shorten vectors
        attempt = 0
        while True:
            try:
                response = self._http().post(url, json=payload)
            except httpx.TimeoutException:
                failure = ProviderError(
                    f"embedding request to {url} timed out after {self._timeout:g} s",
                    hint="check the server, or raise timeout= / lower batch_size=",
                )
            except httpx.HTTPError as exc:
                failure = ProviderError(
                    f"cannot reach the embedding endpoint {url}: {type(exc).__name__}: {exc}",
                    hint="is the server running? check base_url (it should end in /v1)",
                )
            else:
                if response.status_code < 400:
                    return self._parse(response, len(batch), url)
                failure = self._http_error(response, url)
                if response.status_code not in _RETRY_STATUS:
                    raise failure
            if attempt >= self._retries:
                raise failure
            time.sleep(self.retry_backoff * 2**attempt)
            attempt += 1

    def _http_error(self, response: httpx.Response, url: str) -> ProviderError:
        status = response.status_code
        message = f"embedding endpoint {url} answered HTTP {status}: {_server_message(response)}"
        if status in (401, 403):
            hint = f"check the API key (api_key= or the {self._api_key_env} variable)"
        elif status == 404:
            hint = f"check base_url (it should end in /v1) and that model {self._model!r} exists"
        elif status == 429:
            hint = "rate limited: wait, lower batch_size=, or raise retries="
        elif status >= 500:
            hint = "the embedding server failed; retry later or check its logs"
        else:
            hint = "the server rejected the request; check model and input texts"
        return ProviderError(message, hint=hint, status=status)

    def _parse(self, response: httpx.Response, count: int, url: str) -> F32:
        def bad(why: str) -> ProviderError:
            return ProviderError(
                f"embedding endpoint {url} sent an invalid reply: {why}",
                hint="make sure base_url points at an OpenAI-compatible /v1 API",
            )

        try:
            body: Any = response.json()
        except ValueError:
            raise bad("the body is not JSON") from None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != count:
            raise bad(f"expected a 'data' list of {count} embeddings")
        rows: list[Any] = [None] * count
        for pos, item in enumerate(data):
            index = item.get("index", pos) if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or rows[index] is not None:
                raise bad("missing or duplicate 'index' values")
            rows[index] = item.get("embedding")
        try:
            matrix = np.array(rows, dtype=np.float64)
        except (TypeError, ValueError):
            raise bad("embeddings are not equal-length lists of numbers") from None
        if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
            raise bad("embeddings are not equal-length lists of finite numbers")
        norms = np.linalg.norm(matrix, axis=1)
        if not (norms > 0).all():
            raise bad("an embedding is all zeros")
        dim = matrix.shape[1]
        if self._dimension is None:
            self._dimension = dim
        elif dim != self._dimension:
            raise ProviderError(
                f"model {self._model!r} returned {dim}-d vectors, expected {self._dimension}",
                hint="set dimension= to the model's size (or leave it unset to detect it)",
            )
        unit: F32 = (matrix / norms[:, None]).astype(np.float32)
        return unit


__all__ = ["OpenAIEmbedder"]
