"""HTTP plumbing the provider clients share (layer: providers).

:class:`HTTPClient` is the base of the embedding client and the LLM clients: it checks
the common options, reads the API key from the environment, keeps one pooled
``httpx.Client`` and POSTs JSON with retries and exponential backoff on connection
errors, timeouts, 429 and 5xx replies. Failures become ``ProviderError``s worded by the
client's :class:`Wording`, with hints by HTTP status; the API key never appears in them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeVar

import httpx

from memloci.errors import ProviderError, ValidationError

R = TypeVar("R")

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class BadReply(Exception):
    """A 2xx reply of the wrong shape (reported as an invalid reply ``ProviderError``)."""


def server_message(response: httpx.Response) -> str:
    """The error text a server put in its body (short, best effort)."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
    else:
        error = body.get("error", body) if isinstance(body, dict) else body
        text = str(error.get("message", error) if isinstance(error, dict) else error)
    return text[:300]


def retry_after(response: httpx.Response) -> float:
    """Seconds the server asked to wait in ``Retry-After`` (0 when absent or a date)."""
    try:
        return max(0.0, float(response.headers.get("retry-after", 0)))
    except ValueError:
        return 0.0


@dataclass(frozen=True)
class Wording:
    """What a client's ``ProviderError``s say (the defaults are the LLM clients').

    Messages are ``str.format``-ted with ``where`` (``where`` itself with ``url``),
    ``url``, ``timeout``, ``reason`` (short: "connection refused"), ``error`` (the
    exception's type and text); hints with ``provider``, ``model`` and ``api_key_env``.
    """

    where: str = "the LLM at {url}"
    timed_out: str = "{where} did not answer within {timeout:g} s"
    timed_out_hint: str = "check the server, or raise the timeout option"
    unreachable: str = "cannot reach {where}: {reason}"
    unreachable_hint: str = "is the server running? check base_url"
    invalid_hint: str = "make sure base_url points at the {provider} API"
    auth_hint: str = "set {api_key_env} to a valid API key (or pass api_key=)"
    not_found_hint: str = "check base_url and that model {model!r} exists on the server"
    rate_limited_hint: str = "rate limited: wait, or raise max_retries"
    server_failed_hint: str = "the LLM server failed; retry later or check its logs"
    rejected_hint: str = "the server rejected the request; check the model and options"
    base_url_hint: str | None = None
    retries_option: str = "max_retries"


class HTTPClient:
    """One pooled ``httpx.Client`` (opened on first use, reopened after :meth:`close`)
    and :meth:`_post`: JSON in, retries on what may pass, ``ProviderError`` otherwise.

    Subclasses set ``provider`` (the ``model_id`` prefix), ``wording`` and, where they
    differ, the retry rules below; ``retry_backoff`` may be set per instance.
    """

    provider: ClassVar[str] = "http"
    wording: ClassVar[Wording] = Wording()
    retry_status: ClassVar[frozenset[int]] = RETRY_STATUS
    retry_bad_replies: ClassVar[bool] = True  # retry 2xx replies that do not parse
    honour_retry_after: ClassVar[bool] = True  # wait at least what Retry-After asks
    retry_backoff: float = 0.5  # seconds before the first retry; doubles each time
    max_backoff: float = 30.0  # seconds between two attempts at most, unless Retry-After asks more
    max_retry_after: float = 120.0  # a Retry-After longer than this fails at once

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None,
        api_key_env: str,
        timeout: float,
        max_retries: int,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValidationError("model must be a non-empty string")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValidationError(
                f"base_url must be an http(s) URL, got {base_url!r}",
                hint=self.wording.base_url_hint,
            )
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValidationError(f"timeout must be a positive number, got {timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            option = self.wording.retries_option
            raise ValidationError(f"{option} must be an integer ≥ 0, got {max_retries!r}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env) or None
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"{self.provider}:{self.model}@{self.base_url}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        """Close the connection pool (reopened when used again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _headers(self) -> dict[str, str]:
        """Headers of every request: JSON, and the API key as a bearer token if set."""
        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self.timeout, headers=self._headers())
            return self._client

    def _post(self, url: str, payload: dict[str, Any], parse: Callable[[Any], R]) -> R:
        """POST ``payload``; ``parse`` turns the JSON body into the result or raises
        :class:`BadReply`. Retries what may pass; raises ``ProviderError`` otherwise."""
        words = self.wording
        where = words.where.format(url=url)
        attempt = 0
        client = self._http()
        cancelled = ProviderError(
            f"{where}: the request was cancelled (the client was closed)",
            hint="nothing was retried",
        )
        while True:
            wait = min(self.retry_backoff * 2**attempt, self.max_backoff)
            try:
                response = client.post(url, json=payload)
            except httpx.HTTPError as exc:
                if self._client is not client:  # closed under the request: cancelled
                    raise cancelled from None
                failure = self._transport_failure(exc, url, where)
            else:
                if response.status_code < 400:
                    try:
                        return parse(response.json())
                    except (ValueError, BadReply) as exc:
                        why = str(exc) if isinstance(exc, BadReply) else "the body is not JSON"
                        failure = ProviderError(
                            f"{where} sent an invalid reply: {why}",
                            hint=words.invalid_hint.format(provider=self.provider),
                        )
                        if not self.retry_bad_replies:
                            raise failure from None
                else:
                    failure = self._http_error(response, where)
                    if response.status_code not in self.retry_status:
                        raise failure
                    asked = retry_after(response) if self.honour_retry_after else 0.0
                    if asked > self.max_retry_after:  # not worth a blocked caller's wait
                        raise ProviderError(
                            f"{failure.message}; it asks to retry in {asked:.0f} s",
                            hint=failure.hint,
                        )
                    wait = max(wait, asked)
            if attempt >= self.max_retries:
                raise failure
            time.sleep(wait)
            if self._client is not client:  # closed while waiting: no more attempts
                raise cancelled
            attempt += 1

    def _transport_failure(self, exc: httpx.HTTPError, url: str, where: str) -> ProviderError:
        """A ``ProviderError`` for a request that got no reply (timeout, refused, …)."""
        words = self.wording
        if isinstance(exc, httpx.TimeoutException):
            return ProviderError(
                words.timed_out.format(where=where, url=url, timeout=self.timeout),
                hint=words.timed_out_hint,
            )
        reason = "connection refused" if "refused" in str(exc).lower() else str(exc)
        return ProviderError(
            words.unreachable.format(
                where=where,
                url=url,
                reason=reason or type(exc).__name__,
                error=f"{type(exc).__name__}: {exc}",
            ),
            hint=words.unreachable_hint,
        )

    def _http_error(self, response: httpx.Response, where: str) -> ProviderError:
        """A ``ProviderError`` for an HTTP error reply, with a hint by status."""
        words, status = self.wording, response.status_code
        if status in (401, 403):
            hint = words.auth_hint
        elif status == 404:
            hint = words.not_found_hint
        elif status == 429:
            hint = words.rate_limited_hint
        elif status >= 500:
            hint = words.server_failed_hint
        else:
            hint = words.rejected_hint
        return ProviderError(
            f"{where} answered HTTP {status}: {server_message(response)}",
            hint=hint.format(model=self.model, api_key_env=self.api_key_env),
            status=status,
        )


__all__ = [
    "RETRY_STATUS",
    "BadReply",
    "HTTPClient",
    "Wording",
    "retry_after",
    "server_message",
]
