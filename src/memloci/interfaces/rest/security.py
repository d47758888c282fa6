"""HTTP guards of the app (layer: interfaces), as ASGI middleware around every route:

- ``Host`` must name this server (DNS rebinding): loopback names, the bound address, any
  IP address when bound to all interfaces, and the configured ``allowed_hosts`` (``*``
  turns the check off, for a proxy that rewrites Host; such a server always demands an
  API key, as one bound beyond loopback does) — else 421.
- a request of any method from another site's page is refused — else 403: an ``Origin``
  header that is not this server's own origin, or ``Sec-Fetch-Site: cross-site`` /
  ``same-site`` (browsers send it even on a ``no-cors`` GET, which has no Origin). So
  another page in the user's browser can neither write nor cause a write through a
  read (a search reinforces what it finds). A page link to the UI or the docs (a
  top-level navigation) is the one cross-site request let through; requests without
  these headers (curl, the SDKs, agents) and ``Sec-Fetch-Site: none`` / ``same-origin``
  pass.
- a request with a body must declare a JSON content type (``/api/v1/import`` also takes
  JSON Lines) — else 415, so a ``text/plain`` form post is never read.
- an unexpected failure becomes a 500 with a generic message and an error id (logged with
  the traceback); the connection stays usable for the next request.
- every response carries ``X-Content-Type-Options: nosniff`` and ``X-Frame-Options:
  DENY`` (:class:`SecurityHeaders`); a mounted app's plain-text errors (the MCP SDK's)
  get the one error shape (:class:`JsonErrors`).

Every refusal uses the one error shape and happens before any route runs.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from starlette.responses import JSONResponse

from memloci.errors import driver_error, storage_error
from memloci.interfaces.asgi import ASGIApp, HttpMiddleware, Message, Receive, Scope, Send
from memloci.interfaces.hosts import is_loopback

log = logging.getLogger("memloci.server")

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})
FOREIGN_FETCH_SITES = frozenset({b"cross-site", b"same-site"})  # same-site: another port
NOT_PAGES = ("/api", "/mcp")  # a cross-site navigation never reaches these
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
JSON_TYPES = frozenset({"application/json"})
IMPORT_PATH = "/api/v1/import"
IMPORT_TYPES = frozenset({"application/json", "application/x-ndjson", "application/jsonl"})
REQUIRE_KEY = "memloci.require_key"  # scope key: this server always demands an API key
REQUEST_KEY = "memloci.request"  # scope key: the request's RequestNote
ERROR_CODES = {
    400: "invalid_input",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "request_too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
    500: "internal_error",
    507: "storage_full",
}


@dataclass
class RequestNote:
    """What is learnt about a request as it runs, for its access-log line and metrics:
    its id (``X-Request-ID``, and the error id of a 500) and the namespace it used. Every
    copy of the request's scope shares it (``HEAD`` runs as ``GET`` in a copy)."""

    id: str = field(default_factory=lambda: secrets.token_hex(6))
    namespace: str | None = None


def request_note(scope: Scope) -> RequestNote | None:
    note = scope.get(REQUEST_KEY)
    return note if isinstance(note, RequestNote) else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_name(value: str) -> str:
    """The host part of a ``Host`` header or allow-list entry, lower case, without port or
    brackets: ``Example.org:8080`` → ``example.org``, ``[::1]:8765`` → ``::1``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:
        return value.partition(":")[0]
    return value  # a name, or a bare IPv6 address


class HostPolicy:
    """Which ``Host`` headers a server bound to ``bound`` answers, and whether it always
    demands an API key (it does when bound to anything but loopback, and when it answers
    any host: ``*`` gives up the DNS-rebinding check, so a key must take its place)."""

    def __init__(self, bound: str, allowed: Iterable[str] = ()) -> None:
        extra = [a.strip() for a in allowed if a.strip()]
        self.any_host = "*" in extra
        self.wildcard = bound.strip() in WILDCARD_BINDS
        self.listed = {host_name(a) for a in extra if a != "*"}
        self.names = set(LOOPBACK_NAMES) | self.listed
        if not self.wildcard:
            self.names.add(host_name(bound))
        public = not is_loopback(host_name(bound)) if bound.strip() else True
        self.require_key = public or self.any_host

    def allows(self, host: str | None) -> bool:
        if self.any_host:
            return True
        if not host:
            return False
        name = host_name(host)
        return name in self.names or (self.wildcard and _is_ip(name))

    def same_site(self, origin: str, host: str) -> bool:
        """Whether a browser ``Origin`` is this server: the origin of the ``Host`` it was
        sent to, or a name the operator listed (a proxy in front may rewrite Host)."""
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https"):
            return False
        return parts.netloc.lower() == host.strip().lower() or (
            host_name(parts.netloc) in self.listed
        )


def _media_type(value: str | None) -> str:
    return (value or "").partition(";")[0].strip().lower()


def _json_like(media: str, path: str) -> bool:
    allowed = IMPORT_TYPES if path.rstrip("/") == IMPORT_PATH else JSON_TYPES
    return media in allowed or (media.startswith("application/") and media.endswith("+json"))


def _page_navigation(scope: Scope, headers: dict[bytes, bytes]) -> bool:
    """A top-level navigation (a followed link) to a page: the web UI, the docs. It cannot
    read the answer, and these pages change nothing by being loaded (their own API calls
    are same-origin); framing one is a ``Sec-Fetch-Dest: iframe`` and is refused."""
    path = scope.get("path", "")
    return (
        scope.get("method", "GET") in ("GET", "HEAD")
        and headers.get(b"sec-fetch-mode") == b"navigate"
        and headers.get(b"sec-fetch-dest") == b"document"
        and not any(path == p or path.startswith(p + "/") for p in NOT_PAGES)
    )


def _has_body(headers: dict[bytes, bytes]) -> bool:
    length = headers.get(b"content-length", b"").strip()
    if length:
        return length != b"0"
    return b"transfer-encoding" in headers


@dataclass(frozen=True)
class _Refusal:
    """Why :class:`HttpGuard` refuses a request: the status and the error it answers."""

    status: int
    code: str
    message: str
    hint: str

    async def send(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = {"error": {"code": self.code, "message": self.message, "hint": self.hint}}
        await JSONResponse(body, status_code=self.status)(scope, receive, send)


class HttpGuard:
    """Host, Origin and Content-Type checks (see the module docstring)."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app, self.policy = app, policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal.send(scope, receive, send)
            return
        scope[REQUIRE_KEY] = self.policy.require_key
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> _Refusal | None:
        """The first check the request fails, or None when it passes them all."""
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.policy.allows(host):
            return _Refusal(
                421,
                "misdirected_request",
                f"this server does not answer to host {host[:100]!r}",
                "use its address (e.g. 127.0.0.1), or allow the name: memloci serve "
                "--allowed-host NAME (setting allowed_hosts)",
            )
        method = scope.get("method", "GET")
        origin = headers.get(b"origin")
        if origin is not None and not self.policy.same_site(origin.decode("latin-1"), host):
            return _Refusal(
                403,
                "forbidden",
                "cross-site request refused: its Origin is not this server",
                "call the API from a server-side client, or from this server's own pages",
            )
        fetch_site = headers.get(b"sec-fetch-site", b"").strip().lower()
        if fetch_site in FOREIGN_FETCH_SITES and not _page_navigation(scope, headers):
            return _Refusal(
                403,
                "forbidden",
                f"cross-site request refused: it comes from another site's page "
                f"(Sec-Fetch-Site: {fetch_site.decode('latin-1')})",
                "open this server's pages directly (/memories, /docs), or call the API "
                "from a server-side client",
            )
        if method in BODY_METHODS and _has_body(headers):
            media = _media_type(headers.get(b"content-type", b"").decode("latin-1"))
            if not _json_like(media, scope.get("path", "")):
                path = scope.get("path", "")
                wanted = IMPORT_TYPES if path.rstrip("/") == IMPORT_PATH else JSON_TYPES
                return _Refusal(
                    415,
                    "unsupported_media_type",
                    f"the request body must be {' or '.join(sorted(wanted))}, "
                    f"not {media or 'undeclared'}",
                    "send the header 'Content-Type: "
                    + (
                        "application/x-ndjson' (JSON Lines)"
                        if wanted is IMPORT_TYPES
                        else "application/json'"
                    ),
                )
        return None


class CatchAll(HttpMiddleware):
    """Turn an exception no handler took into a 500 with an error id — sent as a normal
    response, so the keep-alive connection stays open. The traceback goes to the log
    with the id; the body carries no exception text. A failure after the response began
    (a broken stream) cannot be answered: the connection is closed, as it must be."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            note = request_note(scope)
            error_id = note.id if note is not None else secrets.token_hex(6)
            method, path = scope.get("method"), scope.get("path")
            fields = {"request_id": error_id}
            log.exception(
                "internal error %s on %s %s", error_id, method, path, extra={"fields": fields}
            )
            if started:
                raise
            if driver_error(exc):  # a database failure: say which, with its hint
                error = storage_error(exc)
                body = {"error": {**error.to_dict(), "details": {"error_id": error_id}}}
                await JSONResponse(body, status_code=error.http_status)(scope, receive, send)
                return
            body = {
                "error": {
                    "code": "internal_error",
                    "message": f"the server failed (error id {error_id}); see its log",
                    "details": {"error_id": error_id},
                }
            }
            await JSONResponse(body, status_code=500)(scope, receive, send)


class SecurityHeaders(HttpMiddleware):
    """``X-Content-Type-Options: nosniff`` and ``X-Frame-Options: DENY`` on every response
    that does not set them itself (JSON, errors, pages, assets, MCP): no answer is
    sniffed as another type, and no other site can frame a page of this server."""

    HEADERS = ((b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"))

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                present = {bytes(k).lower() for k, _ in headers}
                headers += [(k, v) for k, v in self.HEADERS if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


_HINTS = {
    400: "send 'Content-Type: application/json' and a JSON body",
    406: "send 'Accept: application/json, text/event-stream'",
    413: "send less per request or raise MEMLOCI_MAX_REQUEST_BYTES",
}


class JsonErrors(HttpMiddleware):
    """Give an error response that is not JSON — a mounted app's plain-text or empty 4xx /
    5xx, like the MCP SDK's ``406`` or ``Invalid Content-Type header`` — the one error
    shape, keeping its status and other headers (``Allow``)."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        held: Message | None = None
        chunks: list[bytes] = []

        async def reshaped(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                if message["status"] >= 400 and not _is_json(message.get("headers") or []):
                    held = message
                    return
            elif held is not None and message["type"] == "http.response.body":
                chunks.append(bytes(message.get("body", b"")))
                if not message.get("more_body", False):
                    start, held = held, None
                    await _send_json_error(send, start, b"".join(chunks))
                return
            await send(message)

        await self.app(scope, receive, reshaped)


def _is_json(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    media = next(
        (
            _media_type(bytes(v).decode("latin-1"))
            for k, v in headers
            if k.lower() == b"content-type"
        ),
        "",
    )
    return media == "application/json" or media.endswith("+json")


async def _send_json_error(send: Send, start: Message, text: bytes) -> None:
    status = int(start["status"])
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "HTTP error"
    message = text.decode("utf-8", "replace").strip()[:300] or phrase
    err: dict[str, Any] = {"code": ERROR_CODES.get(status, "http_error"), "message": message}
    if status in _HINTS:
        err["hint"] = _HINTS[status]
    body = json.dumps({"error": err}).encode()
    headers = [
        (k, v)
        for k, v in start.get("headers") or []
        if k.lower() not in (b"content-type", b"content-length")
    ]
    headers += [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
