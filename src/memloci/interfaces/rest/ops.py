"""The server's operations surface (layer: interfaces): ``/metrics``, ``/readyz`` and the
access log.

- :class:`Observe` (the outermost middleware) gives every request an id
  (``X-Request-ID``; a 500's error id is the same), counts and times it by method,
  route template (``/api/v1/facts/{memory_id}``, never the raw path) and status, and,
  when asked, writes one access-log record per request (``memloci.access``).
- ``GET /metrics``: the Prometheus text format — those HTTP figures, the service's
  search/add/context latencies (:mod:`memloci.telemetry`), the embedding backlog, the
  store's size, the PostgreSQL pool's use and the process. Open like ``/healthz`` on a
  loopback server; a server that demands API keys (bound beyond loopback, or answering
  any Host) wants a valid key here too (any key: the figures name no memory).
- ``GET /readyz``: readiness — 503 until the store answers and the embedding model is
  loaded (the app loads it in the background at start-up), then 200 with what is
  ready. ``/healthz`` stays liveness: the process is up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.routing import Mount

from memloci import __version__
from memloci.errors import MemlociError
from memloci.interfaces.asgi import ASGIApp, HttpMiddleware, Message, Receive, Scope, Send
from memloci.interfaces.rest.deps import get_caller
from memloci.interfaces.rest.security import REQUEST_KEY, REQUIRE_KEY, RequestNote
from memloci.models import StoreGauges
from memloci.service import MemoryService
from memloci.telemetry import (
    CONTENT_TYPE,
    OPERATIONS,
    Counter,
    Gauge,
    Histogram,
    Metric,
    process_metrics,
    render,
)

access_log = logging.getLogger("memloci.access")
log = logging.getLogger("memloci.server")

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"  # the route label of a request no route took (404s, scans)
GAUGES_TTL = 5.0  # seconds a reading of the store's gauges is reused
STORE_TIMEOUT = 5.0  # seconds /readyz and /metrics wait for the store
POOL_GAUGES = {  # psycopg_pool get_stats() key → gauge
    "pool_min": ("memloci_pg_pool_min_connections", "Connections the pool keeps at least"),
    "pool_max": ("memloci_pg_pool_max_connections", "Connections the pool opens at most"),
    "pool_size": ("memloci_pg_pool_connections", "Connections open (in use or idle)"),
    "pool_available": ("memloci_pg_pool_idle_connections", "Connections idle in the pool"),
    "requests_waiting": ("memloci_pg_pool_requests_waiting", "Requests waiting for a connection"),
}
POOL_COUNTERS = {  # psycopg_pool get_stats() key → counter (since the pool opened)
    "requests_num": ("memloci_pg_pool_requests_total", "Connections asked of the pool", 1),
    "requests_queued": ("memloci_pg_pool_requests_queued_total", "Requests that waited", 1),
    "requests_errors": ("memloci_pg_pool_requests_errors_total", "Requests not served", 1),
    "requests_wait_ms": (
        "memloci_pg_pool_requests_wait_seconds_total",
        "Time requests waited",
        1000,
    ),
    "usage_ms": ("memloci_pg_pool_usage_seconds_total", "Time connections were in use", 1000),
    "connections_num": ("memloci_pg_pool_connections_opened_total", "Connections opened", 1),
    "connections_errors": (
        "memloci_pg_pool_connection_errors_total",
        "Connections that failed to open",
        1,
    ),
    "connections_lost": ("memloci_pg_pool_connections_lost_total", "Connections lost", 1),
}


class HttpMetrics:
    """One app's request figures."""

    def __init__(self) -> None:
        labels = ("method", "route", "status")
        self.requests = Counter(
            "memloci_http_requests_total",
            "HTTP requests answered, by method, route template and status",
            labels,
        )
        self.latency = Histogram(
            "memloci_http_request_duration_seconds",
            "Time to answer an HTTP request, by method, route template and status",
            labels,
        )
        self.in_flight = Gauge("memloci_http_requests_in_flight", "HTTP requests being answered")
        self.in_flight.set(0)

    def families(self) -> list[Metric]:
        return [self.requests, self.latency, self.in_flight]


def route_template(scope: Scope, root_path: str) -> str:
    """The template of the route that took the request; a mounted app's mount path
    (``/mcp``, ``/static``: its own routes are not told apart); else ``unmatched``."""
    mount = str(scope.get("root_path", ""))[len(root_path) :]
    route = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str) or isinstance(route, Mount):
        return mount or (path if isinstance(path, str) else UNMATCHED)
    return mount + path


class Observe(HttpMiddleware):
    """Request id, metrics and access log of every HTTP request (see the module
    docstring). ``access``: write the access-log records (``memloci serve --log-format
    json``; the text format keeps uvicorn's own access log)."""

    def __init__(self, app: ASGIApp, metrics: HttpMetrics, access: bool = False) -> None:
        super().__init__(app)
        self.metrics, self.access = metrics, access

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        note = RequestNote()
        scope[REQUEST_KEY] = note
        root = str(scope.get("root_path", ""))
        status = 500  # what the server sends if the app fails before answering
        header = (b"x-request-id", note.id.encode())

        async def tracked(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message = {**message, "headers": [*(message.get("headers") or []), header]}
            await send(message)

        self.metrics.in_flight.inc()
        start = time.perf_counter()
        try:
            await self.app(scope, receive, tracked)
        finally:
            elapsed = time.perf_counter() - start
            self.metrics.in_flight.inc(-1)
            method = str(scope.get("method", "GET"))
            labels = {
                "method": method if method in METHODS else "other",
                "route": route_template(scope, root),
                "status": str(status),
            }
            self.metrics.requests.inc(**labels)
            self.metrics.latency.observe(elapsed, **labels)
            if self.access and access_log.isEnabledFor(logging.INFO):
                self._log(scope, note, labels["route"], status, elapsed)

    @staticmethod
    def _log(scope: Scope, note: RequestNote, route: str, status: int, elapsed: float) -> None:
        headers = dict(scope.get("headers") or [])
        client = scope.get("client")
        method, path = str(scope.get("method", "")), str(scope.get("path", ""))
        ms = round(elapsed * 1000, 2)
        fields = {
            "request_id": note.id,
            "method": method,
            "route": route,
            "path": path,
            "status": status,
            "duration_ms": ms,
            "namespace": note.namespace,
            "user_agent": headers.get(b"user-agent", b"").decode("latin-1") or None,
            "client": client[0] if client else None,
        }
        level = logging.ERROR if status >= 500 else logging.INFO
        access_log.log(level, "%s %s %s %.1fms", method, path, status, ms, extra={"fields": fields})


class JsonFormatter(logging.Formatter):
    """One JSON object per log record: ``ts`` (UTC), ``level``, ``logger``, ``message``,
    the record's structured ``fields`` (an access-log line's request id, route, …) and
    ``exception`` (the traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        entry: dict[str, Any] = {
            "ts": ts.replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def json_log_config(level: str) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for uvicorn: every record (uvicorn's, memloci's
    access log and errors) as a JSON line on stderr, at ``level``."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": level.upper()},
        "loggers": {
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": False},
        },
    }


class Ready(BaseModel):
    """``/readyz``'s answer once ready (before: 503 with the error shape, ``not_ready``)."""

    status: str = Field(description="ready")
    version: str
    store: str = Field(description="ready: the store answers")
    embedder: str = Field(description="loaded (in process), remote (an endpoint) or none")
    model: str | None = Field(description="the embedding model's id")


class Readiness:
    """Whether the server can serve: its store answers and its embedding model is loaded
    (:meth:`warm` loads it when the app starts)."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self.embedder = "loading"
        self.error: str | None = None  # why the model failed to load
        self.store_error: str | None = None  # why the store did not answer

    async def warm(self) -> None:
        try:
            self.embedder = await self.service.admin.load_embedder()
        except MemlociError as exc:
            self.embedder, self.error = "failed", exc.message
        except Exception as exc:  # a model's own failure: reported by /readyz
            self.embedder, self.error = "failed", str(exc) or type(exc).__name__

    async def store(self) -> str:
        try:
            await asyncio.wait_for(self.service.admin.ping(), STORE_TIMEOUT)
        except (MemlociError, TimeoutError) as exc:
            self.store_error = getattr(exc, "message", None) or "it did not answer in time"
            return "unavailable"
        return "ready"

    @contextlib.asynccontextmanager
    async def warming(self) -> AsyncIterator[None]:
        """Load the model in the background while the app serves (liveness first)."""
        task = asyncio.create_task(self.warm())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def answer(self) -> JSONResponse:
        store = await self.store()
        model = getattr(self.service.embedder, "model_id", None)
        parts = {"store": store, "embedder": self.embedder}
        if store == "ready" and self.embedder not in ("loading", "failed"):
            ready = Ready(status="ready", version=__version__, model=model, **parts)
            return JSONResponse(ready.model_dump())
        if store != "ready":
            message = f"not ready: the store is unavailable ({self.store_error})"
        elif self.embedder == "loading":
            message = "not ready: the embedding model is loading"
        else:
            message = f"not ready: the embedding model failed to load ({self.error})"
        body = {"error": {"code": "not_ready", "message": message, "details": parts}}
        if self.embedder == "failed":
            body["error"]["hint"] = "see the server's log; memloci doctor checks the model"
        return JSONResponse(body, status_code=503, headers={"Retry-After": "1"})


class StoreReadings:
    """The store's gauges, read at most every :data:`GAUGES_TTL` seconds (a scrape of
    several Prometheus servers, or a quick one, costs the database one query)."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self._at = -GAUGES_TTL
        self._last: StoreGauges | None = None
        self._lock = asyncio.Lock()

    async def read(self) -> StoreGauges | None:
        async with self._lock:
            now = time.monotonic()
            if now - self._at >= GAUGES_TTL:
                self._at = now
                try:
                    self._last = await asyncio.wait_for(self.service.admin.gauges(), STORE_TIMEOUT)
                except (MemlociError, TimeoutError) as exc:
                    log.warning("metrics: cannot read the store's gauges: %s", exc)
                    self._last = None
            return self._last


def _store_metrics(service: MemoryService, found: StoreGauges | None) -> list[Metric]:
    backend = "postgres" if "postgres" in type(service.store).__module__ else "sqlite"
    up = Gauge("memloci_store_up", "Whether the store answered the last reading (1) or not (0)")
    up.set(0 if found is None else 1)
    families: list[Metric] = [up]
    worker = getattr(service, "worker", None)
    failing = Gauge("memloci_embedder_failing", "Whether embedding fails now (1: see the log)")
    failing.set(1 if worker is not None and worker.last_error is not None else 0)
    families.append(failing)
    if found is None:
        return families
    size = Gauge("memloci_store_size_bytes", "Size of the store on disk", ("backend",))
    size.set(found.size_bytes, backend=backend)
    backlog = Gauge(
        "memloci_embedding_backlog", "Memories waiting for their vector (every namespace)"
    )
    backlog.set(found.pending_embeddings)
    families += [size, backlog]
    if found.pool:
        in_use = Gauge("memloci_pg_pool_connections_in_use", "Connections lent out")
        in_use.set(found.pool.get("pool_size", 0) - found.pool.get("pool_available", 0))
        families.append(in_use)
        for key, (name, help) in POOL_GAUGES.items():
            gauge = Gauge(name, help)
            gauge.set(found.pool.get(key, 0))
            families.append(gauge)
        for key, (name, help, scale) in POOL_COUNTERS.items():
            counter = Counter(name, help)
            counter.inc(found.pool.get(key, 0) / scale)
            families.append(counter)
    return families


def install(app: FastAPI, service: MemoryService, metrics: HttpMetrics) -> Readiness:
    """``/metrics`` and ``/readyz`` on ``app``; returns the readiness to warm up."""
    readiness = Readiness(service)
    readings = StoreReadings(service)
    build = Gauge("memloci_build_info", "The memloci version serving", ("version",))
    build.set(1, version=__version__)
    text = {"text/plain": {"schema": {"type": "string"}}}

    @app.get(
        "/metrics",
        tags=["server"],
        response_class=Response,
        responses={200: {"description": "Prometheus text exposition format", "content": text}},
        summary="Metrics in the Prometheus text format",
        description="Open on a loopback server (like /healthz); a server that demands API "
        "keys wants any valid key here (Authorization: Bearer …).",
    )
    async def metrics_endpoint(request: Request) -> Response:
        if request.scope.get(REQUIRE_KEY):
            await get_caller(request, service)  # any valid key
        ready = Gauge("memloci_ready", "Whether the embedding model is loaded (see /readyz)")
        ready.set(1 if readiness.embedder not in ("loading", "failed") else 0)
        families: list[Metric] = [build, ready, *metrics.families(), OPERATIONS]
        families += _store_metrics(service, await readings.read())
        families += process_metrics()
        return Response(render(families), media_type=CONTENT_TYPE)

    @app.get(
        "/readyz",
        tags=["server"],
        responses={200: {"model": Ready}},
        summary="Readiness: 200 once the store answers and the embedding model is loaded",
    )
    async def readyz() -> JSONResponse:
        return await readiness.answer()

    return readiness
