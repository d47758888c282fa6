"""The HTTP app (layer: interfaces): REST API, web UI and MCP endpoint in one FastAPI app.

Every error leaves as one JSON shape, ``{"error": {"code", "message", "hint"?,
"details"?}}`` — domain errors, request validation, unknown routes, oversized
bodies, refused hosts, origins and content types (``security``) and unexpected
failures alike (guarded by a test).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from memloci import __version__
from memloci.config import Settings
from memloci.errors import MemlociError
from memloci.interfaces.rest.deps import KnownQuery
from memloci.interfaces.rest.security import (
    ERROR_CODES,
    ASGIApp,
    CatchAll,
    HostPolicy,
    HttpGuard,
    Message,
    Receive,
    Scope,
    SecurityHeaders,
    Send,
)
from memloci.service import MemoryService

log = logging.getLogger("memloci.server")

_STATUS_CODES = ERROR_CODES


def error_body(code: str, message: str, hint: str | None = None, **details: Any) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if hint:
        err["hint"] = hint
    if details:
        err["details"] = details
    return {"error": err}


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, before any route (or mounted
    app, like MCP) runs: a declared ``Content-Length`` is checked as is; a body without
    one (``Transfer-Encoding: chunked``) is read here, up to the limit, and handed on
    whole — a route never starts on a body that turns out too large midway."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
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


def _validation_message(exc: RequestValidationError) -> tuple[str, list[dict[str, Any]]]:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path"))
        if err.get("type") == "json_invalid":
            return "request body is not valid JSON", [{"field": "body", "problem": err["msg"]}]
        problems.append({"field": loc or "body", "problem": err.get("msg", "invalid")})
    first = problems[0] if problems else {"field": "body", "problem": "invalid"}
    return f"{first['field']}: {first['problem']}", problems


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(MemlociError)
    async def _domain(request: Request, exc: MemlociError) -> JSONResponse:
        return JSONResponse({"error": exc.to_dict()}, status_code=exc.http_status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, problems = _validation_message(exc)
        hint = "see the API docs at /docs"
        body = error_body("invalid_input", message, hint=hint, errors=problems)
        return JSONResponse(body, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        headers = dict(exc.headers or {})
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.method} {request.url.path}"
        if exc.status_code == 405:
            allow = _allowed_methods(request)
            headers["Allow"] = ", ".join(allow)
            method = "HEAD" if request.scope.get(HEAD_KEY) else request.method
            message = f"{method} is not allowed here; use {' or '.join(allow)}"
        body = error_body(code, message)
        return JSONResponse(body, status_code=exc.status_code, headers=headers or None)


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (FastAPI has a route per method);
    ``HEAD`` wherever ``GET`` is (:class:`HeadAsGet`)."""
    found = []
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
        probe = {"type": "http", "path": request.url.path, "method": method, "root_path": ""}
        as_get = method == "HEAD" and "GET" in found
        if as_get or any(r.matches(probe)[0] is Match.FULL for r in request.app.router.routes):
            found.append(method)
    return found


def create_app(
    service: MemoryService,
    *,
    close_service: bool = False,
    maintenance: bool = True,
    mcp: bool = True,
    access_log: bool = False,
) -> FastAPI:
    """The app around one service. ``close_service`` closes it when the app stops;
    ``access_log``: one ``memloci.access`` log record per request (see ``rest.ops``)."""
    from memloci.interfaces.rest import openapi, ops, routes_memory, routes_nodes

    mcp_app = None
    if mcp:
        from memloci.interfaces.mcp import http_app

        mcp_app = http_app(service, guard=False)  # this app's guards cover the mount

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(readiness.warming())
            if mcp_app is not None:
                await stack.enter_async_context(mcp_app.router.lifespan_context(mcp_app))
            if maintenance and service.settings.maintenance_time:
                from memloci.interfaces.rest.schedule import nightly

                await stack.enter_async_context(nightly(service))
            try:
                yield
            finally:
                if close_service:
                    await service.flush(timeout=10)
                    service.close()

    app = FastAPI(
        title="memloci",
        version=__version__,
        description="Long-term memory for LLM agents: REST API. Errors share one JSON shape "
        '`{"error": {"code", "message", "hint"}}`.',
        lifespan=lifespan,
        docs_url=None,  # served offline by rest/docs.py
        redoc_url=None,
    )
    app.state.service = service
    install_error_handlers(app)
    openapi.install(app)
    add_guards(app, service.settings)
    http_metrics = ops.HttpMetrics()
    app.add_middleware(ops.Observe, metrics=http_metrics, access=access_log)  # outermost
    readiness = ops.install(app, service, http_metrics)

    @app.get("/healthz", tags=["server"], summary="Liveness: the process is up (see /readyz)")
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/memories")

    app.include_router(routes_nodes.router, dependencies=[KnownQuery])
    app.include_router(routes_memory.router, dependencies=[KnownQuery])
    _include_optional(app)
    if mcp_app is not None:
        app.mount("/mcp", mcp_app)
    return app


def _include_optional(app: FastAPI) -> None:
    """Routers and pages that live in their own modules."""
    from memloci.interfaces.rest import docs, routes_records
    from memloci.interfaces.web import pages

    app.include_router(routes_records.router, dependencies=[KnownQuery])
    pages.install(app)
    docs.install(app, title="memloci")
