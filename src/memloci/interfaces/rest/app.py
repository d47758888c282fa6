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
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from memloci import __version__
from memloci.errors import MemlociError
from memloci.interfaces.rest.deps import KnownQuery
from memloci.interfaces.rest.guards import HEAD_KEY, add_guards, error_body
from memloci.interfaces.rest.security import ERROR_CODES
from memloci.service import MemoryService

log = logging.getLogger("memloci.server")


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
        code = ERROR_CODES.get(exc.status_code, "http_error")
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
    from memloci.interfaces.rest import (
        docs,
        openapi,
        ops,
        routes_memory,
        routes_nodes,
        routes_records,
    )
    from memloci.interfaces.web import pages

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
    app.include_router(routes_records.router, dependencies=[KnownQuery])
    pages.install(app)
    docs.install(app, title="memloci")
    if mcp_app is not None:
        app.mount("/mcp", mcp_app)
    return app
