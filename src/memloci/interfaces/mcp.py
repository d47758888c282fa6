"""The MCP server (layer: interfaces): every agent tool over stdio and streamable HTTP.

The tools are not redefined here: ``tools/list`` serves :func:`memloci.tools.mcp_tools`
(name, description and the exact JSON input schema) and every ``tools/call`` goes
through :meth:`memloci.tools.Tools.call`, so validation and error texts are the same
as in every other agent loop. A result starting with ``Error:`` is sent with
``isError: true``.

The low-level :class:`mcp.server.Server` is used because ``MCPServer`` derives each
tool's schema from a Python signature and cannot take one as JSON.

Over HTTP (:func:`http_app`, mounted at ``/mcp`` by the REST app) the server's API
keys apply as in the REST API: once a key exists, each request needs
``Authorization: Bearer <key>`` and the tools act in one of the key's namespaces
(``?namespace=``, else its first); ``?user=`` / ``?agent=`` bind the calls. The REST
app's HTTP guards apply too — the same Host allow-list (not the SDK's own, which wants
a port in ``Host``), Origin / ``Sec-Fetch-Site`` and body-size checks — and every error,
the SDK's plain-text ones included, leaves in the REST API's JSON error shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memloci import __version__
from memloci._extras import require
from memloci.errors import MemlociError, UnauthorizedError, ValidationError
from memloci.interfaces.asgi import ASGIApp, HttpMiddleware, Receive, Scope, Send
from memloci.service import MemoryService
from memloci.tools import TOOLS, Tools, mcp_tools

try:
    import anyio
    import mcp.types as types
    from mcp.server import Server, ServerRequestContext
    from mcp.server.stdio import stdio_server
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
except ImportError:  # the MCP SDK is missing: say which extra adds it
    require("server", what="memloci.interfaces.mcp")
    raise

__all__ = ["McpCaller", "build_server", "http_app", "run_stdio"]

SCOPE_KEY = "memloci.mcp_caller"  # where the HTTP middleware leaves the request's caller
INSTRUCTIONS = (
    "memloci is your long-term memory. Call recall before answering questions about the "
    "user or past work; call remember to store durable facts; record_episode after a task."
)
ToolContext = ServerRequestContext[Any, Any]


@dataclass(frozen=True)
class McpCaller:
    """The identity tool calls run as: bound :class:`Tools` plus write permission."""

    tools: Tools
    may_write: bool = True

    async def call(self, name: str, arguments: dict[str, Any] | None) -> str:
        """The tool's text answer; ``Error: …`` on any problem (never raises)."""
        tool = TOOLS.get(name)
        if tool is not None and not tool.read_only and not self.may_write:
            ns = self.tools.bound.namespace
            return (
                f"Error: this API key may not write namespace {ns!r}. Hint: use a key "
                "created for writing (memloci keys create NAME -n NAMESPACE)."
            )
        return await self.tools.call(name, arguments)


def _listing() -> list[types.Tool]:
    listed = []
    for spec in mcp_tools():
        read_only = TOOLS[spec.name].read_only
        # memloci keeps every version, so no tool destroys anything.
        hints = types.ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=None if read_only else False,
            open_world_hint=False,
        )
        listed.append(
            types.Tool(
                name=spec.name,
                description=spec.description,
                input_schema=spec.input_schema,
                annotations=hints,
            )
        )
    return listed


def build_server(
    service: MemoryService,
    *,
    namespace: str | None = None,
    user: str | None = None,
    agent: str | None = None,
    http: bool = False,
) -> Server[Any]:
    """An MCP server offering every agent tool over ``service``.

    ``namespace`` (default: the service's), ``user`` and ``agent`` bind every call; over
    HTTP (``http``) a request's API key and query parameters take their place (see
    :func:`http_app`), and a call without an authenticated request is refused, never
    run unbound. Invalid identities raise :class:`~memloci.errors.ValidationError`.
    """
    default = (
        None if http else McpCaller(Tools(service, namespace=namespace, user=user, agent=agent))
    )
    listed = _listing()
    schemas = {t.name: t.input_schema for t in listed}

    async def list_tools(
        ctx: ToolContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ToolContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = _request_caller(ctx) or default
        if caller is None:  # over HTTP, only as the request's key and parameters allow
            text = "Error: this call came without an authenticated HTTP request; nothing ran."
        else:
            text = await caller.call(params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            is_error=text.startswith("Error:"),
        )

    return Server(
        "memloci",
        version=__version__,
        title="memloci memory",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _request_caller(ctx: ToolContext) -> McpCaller | None:
    """The caller the HTTP middleware attached to this message's request, if any."""
    request = ctx.request
    if not isinstance(request, Request):
        return None
    caller = request.scope.get(SCOPE_KEY)
    return caller if isinstance(caller, McpCaller) else None


def run_stdio(service: MemoryService, *, user: str | None = None, agent: str | None = None) -> None:
    """Serve the tools on stdin/stdout until the client disconnects (``memloci mcp``).

    When stdin ends, the requests already read are finished and answered before the
    server stops (``printf '…' | memloci mcp`` gets every answer, and its writes are
    stored): the SDK would cancel them with "Connection closed"."""
    server = build_server(service, user=user, agent=agent)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as tg:
            reads, writes = _drained(tg, read_stream, write_stream)
            await server.run(reads, writes, server.create_initialization_options())

    anyio.run(serve)


def _drained(tg: Any, read_stream: Any, write_stream: Any) -> tuple[Any, Any]:
    """Streams between the SDK and stdio that hold back the end of input until every
    request read has been answered (or cancelled by the client)."""
    to_server, reads = anyio.create_memory_object_stream[Any](0)
    writes, from_server = anyio.create_memory_object_stream[Any](0)
    open_ids: set[str] = set()
    answered = anyio.Event()

    def key(value: object) -> str:
        return repr(value)

    def settle(request_id: object) -> None:
        nonlocal answered
        open_ids.discard(key(request_id))
        if not open_ids:
            answered.set()

    async def inbound() -> None:
        nonlocal answered
        async with to_server:
            async for item in read_stream:
                msg = getattr(item, "message", None)
                if isinstance(msg, types.JSONRPCRequest):
                    if not open_ids:
                        answered = anyio.Event()
                    open_ids.add(key(msg.id))
                elif isinstance(msg, types.JSONRPCNotification):
                    params = msg.params or {}
                    if msg.method == "notifications/cancelled" and "requestId" in params:
                        settle(params["requestId"])
                await to_server.send(item)
            if open_ids:  # stdin ended: let the requests in flight answer first
                await answered.wait()

    async def outbound() -> None:
        async with from_server, write_stream:
            async for item in from_server:
                msg = getattr(item, "message", None)
                await write_stream.send(item)
                if isinstance(msg, types.JSONRPCResponse | types.JSONRPCError):
                    settle(msg.id)

    tg.start_soon(inbound)
    tg.start_soon(outbound)
    return reads, writes


def http_app(service: MemoryService, *, guard: bool = True) -> Starlette:
    """Streamable HTTP at the app's root, meant to be mounted (``app.mount("/mcp", …)``).

    The caller must run ``app.router.lifespan_context(app)`` (it runs the MCP session
    manager), as the REST app does. Every request is checked against the API keys.
    ``guard``: wrap the app in the REST app's HTTP guards (Host, Origin, content type,
    body size; :func:`memloci.interfaces.rest.guards.add_guards`) — off only when it is
    mounted in an app that has them, as ``create_app`` does.
    """
    from memloci.interfaces.rest.security import JsonErrors

    server = build_server(service, http=True)
    # the SDK's DNS-rebinding check is off: the guards (HttpGuard) check Host and Origin
    # for /mcp exactly as for /api, and answer in the JSON error shape
    app = server.streamable_http_app(
        streamable_http_path="/",
        host=service.settings.host,
        max_request_body_size=service.settings.max_request_bytes,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app.add_middleware(_KeyAuth, service=service)
    app.add_middleware(JsonErrors)  # the SDK's plain-text 400 / 406 / 413
    if guard:
        from memloci.interfaces.rest.guards import add_guards

        add_guards(app, service.settings)
    return app


class _KeyAuth(HttpMiddleware):
    """ASGI middleware: authenticate an MCP HTTP request and attach its :class:`McpCaller`."""

    def __init__(self, app: ASGIApp, service: MemoryService) -> None:
        super().__init__(app)
        self.service = service

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            caller = await _http_caller(self.service, Request(scope))
        except MemlociError as exc:
            headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, UnauthorizedError) else None
            body = {"error": exc.to_dict()}
            await JSONResponse(body, exc.http_status, headers=headers)(scope, receive, send)
            return
        await self.app({**scope, SCOPE_KEY: caller}, receive, send)


async def _http_caller(service: MemoryService, request: Request) -> McpCaller:
    """Who an HTTP request acts as: its API key's namespace and write right, plus
    ``?namespace=``, ``?user=`` and ``?agent=``. Raises when the key or namespace is refused.
    """
    from memloci.interfaces.rest.deps import get_caller

    key_caller = await get_caller(request, service)
    key = key_caller.key
    query = request.query_params
    for name in ("namespace", "user", "agent"):
        if len(query.getlist(name)) > 1:  # one binding: never "the last one wins"
            raise ValidationError(f"?{name}= is given more than once", hint=f"give one {name}")
    namespace = query.get("namespace")
    if not namespace:
        first = key.namespaces[0] if key is not None and key.namespaces else "*"
        namespace = service.settings.namespace if first == "*" else first
    namespace = key_caller.check(namespace, write=False)
    # a parameter given empty ("?user=", an unfilled template) is refused by the id check,
    # never read as "no binding": that would open every user's memories
    user, agent = query.get("user"), query.get("agent")
    tools = Tools(service, namespace=namespace, user=user, agent=agent)
    return McpCaller(tools, may_write=key is None or bool(key.allows(namespace, True)))
