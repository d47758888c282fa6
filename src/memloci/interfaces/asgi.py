"""ASGI types and the base of memloci's HTTP middleware (layer: interfaces).

Kept free of web-framework imports so the MCP server can use it without loading the
REST app.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class HttpMiddleware:
    """An ASGI middleware for HTTP requests: :meth:`http` handles each one; any other
    scope (lifespan, websocket) goes to the wrapped ``app`` untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one HTTP request (calling ``self.app`` to pass it on)."""
        raise NotImplementedError
