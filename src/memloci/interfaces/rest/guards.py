"""The HTTP guards (layer: interfaces) every app of the server wears — the REST app and
the MCP app alike: body limit, HEAD as GET, Host / Origin / content-type checks
(``security``), the catch-all 500 and the security headers. Apart from ``app`` so that
the MCP app puts them on without importing the REST app.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse
from starlette.applications import Starlette

from memloci.config import Settings
from memloci.interfaces.asgi import ASGIApp, HttpMiddleware, Message, Receive, Scope, Send
from memloci.interfaces.rest.security import CatchAll, HostPolicy, HttpGuard, SecurityHeaders


def error_body(code: str, message: str, hint: str | None = None, **details: Any) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if hint:
        err["hint"] = hint
    if details:
        err["details"] = details
    return {"error": err}


class BodyLimit(HttpMiddleware):
    """Refuse request bodies over ``limit`` bytes with 413, before any route (or mounted
    app, like MCP) runs: a declared ``Content-Length`` is checked as is; a body without
    one (``Transfer-Encoding: chunked``) is read here, up to the limit, and handed on
    whole — a route never starts on a body that turns out too large midway."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        super().__init__(app)
        self.limit = limit

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:  # the server holds the body to its declared length
            if declared.strip().isdigit() and int(declared) > self.limit:
                await self._reject(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        read = await self._read(receive)
        if read is None:
            await self._reject(scope, receive, send)
            return
        queued: list[Message] = read

        async def replay() -> Message:
            return queued.pop(0) if queued else await receive()

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive) -> list[Message] | None:
        """The whole body as one message (plus a disconnect that came with it), or None
        once it passes the limit."""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return [{"type": "http.request", "body": bytes(body), "more_body": False}, message]
            body += message.get("body", b"")
            if len(body) > self.limit:
                return None
            if not message.get("more_body", False):
                return [{"type": "http.request", "body": bytes(body), "more_body": False}]

    async def _reject(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = error_body(
            "request_too_large",
            f"request body is larger than {self.limit} bytes",
            hint="send less per request (batch it) or raise MEMLOCI_MAX_REQUEST_BYTES",
        )
        await JSONResponse(body, status_code=413)(scope, receive, send)


HEAD_KEY = "memloci.head"  # scope key: the request came as HEAD (run as GET)


class HeadAsGet:
    """Answer ``HEAD`` wherever ``GET`` is answered (RFC 9110: a server supports both):
    the request runs as the ``GET`` it asks about and only the head of the answer is
    sent (its headers, ``Content-Length`` included). Not under ``/mcp``, whose ``GET``
    opens an event stream: ``HEAD`` there is the MCP app's to answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] != "http"
            or scope.get("method") != "HEAD"
            or path == "/mcp"
            or path.startswith("/mcp/")
        ):
            await self.app(scope, receive, send)
            return
        done = False

        async def head_only(message: Message) -> None:
            nonlocal done
            if message["type"] == "http.response.body":
                if done:
                    return
                done = True
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        inner = {**scope, "method": "GET", HEAD_KEY: True}
        try:
            await self.app(inner, receive, head_only)
        finally:
            if "route" in inner:  # for the metrics (rest.ops): the route that answered
                scope["route"] = inner["route"]


def add_guards(app: Starlette, settings: Settings) -> None:
    """The HTTP guards around every route of ``app`` (see ``security``): body limit,
    Host / Origin / content-type checks, the catch-all 500 and the security headers."""
    app.add_middleware(HeadAsGet)
    app.add_middleware(BodyLimit, limit=settings.max_request_bytes)
    app.add_middleware(HttpGuard, policy=HostPolicy(settings.host, settings.allowed_hosts))
    app.add_middleware(CatchAll)  # no exception reaches the server
    app.add_middleware(SecurityHeaders)  # outermost: on every answer, a 500 included


__all__ = ["HEAD_KEY", "BodyLimit", "HeadAsGet", "add_guards", "error_body"]
