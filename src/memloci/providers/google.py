"""Google Gemini API embeddings client (layer: providers).

``GoogleEmbedder`` speaks the Generative Language REST API: ``POST
{base_url}/models/{model}:batchEmbedContents`` for a batch and ``:embedContent`` for a
query, the API key in the ``x-goog-api-key`` header (``GOOGLE_API_KEY`` by default).
Vectors are returned as unit-length float32; every failure surfaces as a
``ProviderError`` with a hint, and the API key never appears in it. The default model
for provider ``google`` is ``text-embedding-004``.
"""

from __future__ import annotations

from typing import Any

from memloci.providers.http import BadReply, Wording
from memloci.providers.openai import F32, OpenAIEmbedder

GOOGLE_URL = "https://generativelanguage.googleapis.com/v1beta"
_WORDING = Wording(
    where="Google embedding endpoint {url}",
    timed_out="embedding request to {url} timed out after {timeout:g} s",
    timed_out_hint="check the network, or raise timeout= / lower batch_size=",
    unreachable="cannot reach the Google embedding endpoint {url}: {error}",
    unreachable_hint="check base_url (e.g. https://generativelanguage.googleapis.com/v1beta)",
    invalid_hint="make sure base_url points at the Generative Language API (…/v1beta)",
    auth_hint="check the API key (api_key= or the {api_key_env} variable)",
    not_found_hint="check base_url and that model {model!r} exists",
    rate_limited_hint="rate limited: wait, lower batch_size=, or raise retries=",
    server_failed_hint="the embedding server failed; retry later",
    rejected_hint="the server rejected the request; check model and input texts",
    base_url_hint="e.g. https://generativelanguage.googleapis.com/v1beta",
    retries_option="retries",
)


class GoogleEmbedder(OpenAIEmbedder):
    """Embeddings from Google's ``models/{model}:batchEmbedContents`` (and
    ``:embedContent`` for one text). Options as :class:`OpenAIEmbedder`; ``model``
    defaults to ``text-embedding-004``, ``api_key_env`` to ``GOOGLE_API_KEY`` and
    ``batch_size`` to 100 (the API's limit per batch)."""

    provider = "google"
    wording = _WORDING

    def __init__(
        self,
        *,
        model: str = "text-embedding-004",
        base_url: str = GOOGLE_URL,
        api_key: str | None = None,
        api_key_env: str = "GOOGLE_API_KEY",
        dimension: int | None = None,
        timeout: float = 30,
        batch_size: int = 100,
        retries: int = 2,
    ) -> None:
        super().__init__(
            model=model.removeprefix("models/"),
            base_url=base_url,
            api_key=api_key,
            api_key_env=api_key_env,
            dimension=dimension,
            timeout=timeout,
            batch_size=batch_size,
            retries=retries,
        )
        self._asked = self._dimension  # sent as outputDimensionality only when given

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["x-goog-api-key"] = self._api_key
        return headers

    def _content(self, text: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": f"models/{self.model}",
            "content": {"parts": [{"text": text or " "}]},
        }
        if self._asked is not None:
            body["outputDimensionality"] = self._asked
        return body

    def _request(self, batch: list[str]) -> F32:
        base = f"{self.base_url}/models/{self.model}"
        if len(batch) == 1:
            return self._post(
                f"{base}:embedContent", self._content(batch[0]), lambda body: self._rows(body, 1)
            )
        payload = {"requests": [self._content(t) for t in batch]}
        return self._post(
            f"{base}:batchEmbedContents", payload, lambda body: self._rows(body, len(batch))
        )

    def _rows(self, body: Any, count: int) -> F32:
        if not isinstance(body, dict):
            raise BadReply("expected a JSON object")
        if count == 1 and isinstance(body.get("embedding"), dict):
            items: Any = [body["embedding"]]
        else:
            items = body.get("embeddings")
        if not isinstance(items, list) or len(items) != count:
            raise BadReply(f"expected an 'embeddings' list of {count} embeddings")
        return self._unit_rows(
            [item.get("values") if isinstance(item, dict) else None for item in items]
        )


__all__ = ["GoogleEmbedder"]
