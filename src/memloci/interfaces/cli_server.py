"""``memloci serve``, ``memloci mcp`` and ``memloci keys`` (layer: interfaces)."""

from __future__ import annotations

import asyncio
import errno
import logging
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from memloci._extras import require
from memloci.config import Settings, describe
from memloci.errors import ConflictError, PermissionDeniedError, StorageError, ValidationError
from memloci.interfaces.cli_common import (
    DbOpt,
    EmbOpt,
    JsonOpt,
    NsOpt,
    Table,
    embed_all,
    emit_json,
    err,
    examples,
    note,
    open_memory,
    out,
    say,
    settings_for,
)
from memloci.interfaces.hosts import is_loopback


class LogFormat(StrEnum):
    """How ``memloci serve`` writes its log."""

    TEXT = "text"
    JSON = "json"


keys_app = typer.Typer(
    rich_markup_mode="markdown",
    help="API keys for the server: each maps to the namespaces it may read or write.",
    no_args_is_help=True,
    epilog=examples(
        "memloci keys create my-agent -n default",
        "memloci keys create reader -n team-a -n team-b --read-only",
        "memloci keys create ops --admin",
        "memloci keys list",
        "memloci keys revoke Ab3dE6gH",
    ),
)


def serve(
    host: Annotated[
        str | None, typer.Option(help="Address to listen on (default 127.0.0.1).")
    ] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port (default 8765).")] = None,
    db: DbOpt = None,
    namespace: NsOpt = None,
    embedder: EmbOpt = None,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="Load the bundled demo conversation first (into a new temp store unless "
            "--db is given), so the UI has something to show.",
        ),
    ] = False,
    maintenance: Annotated[
        bool, typer.Option(help="Run the daily maintenance job inside the server.")
    ] = True,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    log_format: Annotated[
        LogFormat,
        typer.Option(
            help="Log lines as text (uvicorn's) or json: one JSON object per request "
            "(request id, route, status, duration…) and per log record, on stderr.",
        ),
    ] = LogFormat.TEXT,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="Also answer requests for this Host name (repeat; e.g. behind a proxy). "
            "Others get 421 (DNS-rebinding protection); '*' turns the check off "
            "(then API keys are required).",
        ),
    ] = None,
) -> None:
    """Run the server: REST API (/api, docs at /docs), web UI (/memories) and MCP (/mcp)."""
    require("server", what="`memloci serve`")
    settings = settings_for(db, namespace, embedder)
    overrides: dict[str, object] = {
        k: v for k, v in (("host", host), ("port", port)) if v is not None
    }
    if allowed_host:
        overrides["allowed_hosts"] = [*settings.allowed_hosts, *allowed_host]
    settings = settings.model_copy(update=overrides)
    sock = listen(settings.host, settings.port)  # a busy port fails before anything loads
    previous = signal.signal(signal.SIGTERM, _stop)  # SIGTERM, like Ctrl-C, cleans up
    scratch = Path(tempfile.mkdtemp(prefix="memloci-serve-")) if demo and db is None else None
    try:
        if scratch is not None:
            settings = settings.model_copy(update={"path": str(scratch / "demo.db")})
        _serve(
            settings,
            sock,
            demo=demo,
            namespace=namespace,
            embedder=embedder,
            maintenance=maintenance,
            logs=(log_level, log_format),
        )
    except (KeyboardInterrupt, _Stopped):
        # Ctrl-C or SIGTERM (uvicorn re-raises the one it shut down on)
        if log_format is LogFormat.JSON:
            logging.getLogger("memloci.server").info("stopped")
        else:
            note("Stopped.")
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
            note(f"Removed the throw-away demo store {scratch}.")


def _serve(
    settings: Settings,
    sock: socket.socket,
    *,
    demo: bool,
    namespace: str | None,
    embedder: EmbOpt,
    maintenance: bool,
    logs: tuple[str, LogFormat],
) -> None:
    """``logs``: the log level and format."""
    import uvicorn

    from memloci.interfaces.rest import create_app
    from memloci.sdk import AsyncMemory

    if demo:
        _load_demo(settings.path, namespace, embedder)
    memory = AsyncMemory(settings=settings, embedder=settings.embedder)
    service = memory.service
    try:
        has_keys = asyncio.run(service.keys.has_keys())
        guard_public(settings.host, has_keys=has_keys, allowed_hosts=settings.allowed_hosts)
    except BaseException:
        service.close()
        raise
    log_level, log_format = logs
    as_json = log_format is LogFormat.JSON
    app = create_app(service, close_service=True, maintenance=maintenance, access_log=as_json)
    url = f"http://{_url_host(settings.host)}:{settings.port}"
    say(f"memloci serving {describe(settings.path)} (namespace {settings.namespace!r})", "bold")
    say(f"  web UI   {url}/memories")
    say(f"  REST     {url}/api/v1  (OpenAPI docs: {url}/docs)")
    say(f"  MCP      {url}/mcp/  (streamable HTTP)")
    logging_options: dict[str, Any] = {}
    if as_json:
        from memloci.interfaces.rest.ops import json_log_config

        logging_options = {"log_config": json_log_config(log_level), "access_log": False}
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        lifespan="on",
        **logging_options,
    )
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        if not server.started:
            service.close()  # the app never started, so its lifespan never closes it
    if not server.started:
        raise StorageError(
            "the server could not start (see the log above)",
            hint="run with --log-level debug for details",
        )


class _Stopped(Exception):
    """SIGTERM: stop like Ctrl-C (the server shuts down gracefully first)."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (listening), or one clear error: the port is
    taken (:class:`ConflictError`, exit 4), not allowed (:class:`PermissionDeniedError`,
    exit 5) or ``host`` is not an address of this machine (:class:`ValidationError`,
    exit 2). The server then serves on this very socket, so nothing can take the port
    in between."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ValidationError(
            f"cannot listen on {host}: {exc.strerror}", hint="give an IP address or a local name"
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        where = f"{_url_host(host)}:{port}"
        if exc.errno == errno.EADDRINUSE:
            raise ConflictError(
                f"port {port} is already in use ({where})",
                hint="stop the other server, or pick another port with --port",
            ) from None
        if exc.errno == errno.EACCES:
            raise PermissionDeniedError(
                f"not allowed to listen on {where}",
                hint="ports below 1024 need privileges; use --port 8765 or another high port",
            ) from None
        raise ValidationError(
            f"cannot listen on {where}: {exc.strerror}",
            hint="give an address of this machine with --host (127.0.0.1 for local use)",
        ) from None
    sock.set_inheritable(True)
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def guard_public(host: str, *, has_keys: bool, allowed_hosts: Iterable[str] = ()) -> None:
    """Refuse to serve an open API on anything but loopback — or to any ``Host``
    (``--allowed-host '*'``): that turns off the DNS-rebinding check, so any web page
    could reach a loopback server through a name of its own."""
    if not is_loopback(host) and not has_keys:
        raise PermissionDeniedError(
            f"refusing to listen on {host} without API keys: anyone who can reach it could "
            "read and change every memory",
            hint="create a key first (memloci keys create NAME -n NAMESPACE), "
            "or listen on 127.0.0.1",
        )
    if "*" in (a.strip() for a in allowed_hosts) and not has_keys:
        raise PermissionDeniedError(
            "refusing to answer any Host ('--allowed-host *') without API keys: any web "
            "page could then read and change every memory (DNS rebinding)",
            hint="create a key first (memloci keys create NAME -n NAMESPACE), or allow "
            "the proxy's own name instead: --allowed-host memory.example.org",
        )


def _load_demo(path: str, namespace: str | None, embedder: EmbOpt) -> None:
    from memloci.interfaces.demo import load_demo

    with open_memory(path, namespace, embedder) as m:
        if m.list(limit=1, include_forgotten=True):
            note(f"{path} already holds memories; not loading the demo again.")
            return
        with err.status("Loading the demo conversation…"):
            done = load_demo(m)
        note(
            f"Loaded the demo: {done.turns} turns from {done.sessions} sessions, {done.facts} "
            f"facts, {done.entities} entities, {done.procedures} procedures."
        )
        embed_all(m, "Embedding (bundled local model)")


def mcp(
    db: DbOpt = None,
    namespace: NsOpt = None,
    embedder: EmbOpt = None,
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="Bind every tool call to this user.")
    ] = None,
    agent: Annotated[str | None, typer.Option(help="Bind every tool call to this agent.")] = None,
) -> None:
    """Run the MCP server on stdio (for Claude Desktop, Cursor, … — see the README)."""
    require("server", what="`memloci mcp`")
    from memloci.interfaces.mcp import run_stdio

    with open_memory(db, namespace, embedder) as m:
        run_stdio(m.service, user=user, agent=agent)


# ---------------------------------------------------------------------- keys
@keys_app.command(
    "create",
    epilog=examples(
        "memloci keys create my-agent -n default",
        "memloci keys create dashboards -n team-a -n team-b --read-only",
        "memloci keys create ops --admin --json",
    ),
)
def keys_create(
    name: Annotated[str, typer.Argument(help="A label for the key (who or what uses it).")],
    key_namespaces: Annotated[
        list[str] | None,
        typer.Option("--namespace", "-n", help="Namespace the key may use (repeat for several)."),
    ] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="Reads only.")] = False,
    admin: Annotated[
        bool, typer.Option("--admin", help="Every namespace, plus key management.")
    ] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an API key. The secret is printed once; only its hash is stored."""
    if not key_namespaces and not admin:
        raise ValidationError(
            "a key needs at least one namespace", hint="add -n NAMESPACE, or --admin"
        )
    nss = key_namespaces or ["*"]
    with open_memory(db, None, None) as m:
        key, secret = m._call(
            m.service.keys.create_key(name, nss, write=not read_only, admin=admin)
        )
    if as_json:
        emit_json({**key.model_dump(mode="json"), "secret": secret})
        return
    say(
        f"Created key {key.id} ({name}) for {', '.join(key.namespaces)}"
        f"{' (read-only)' if read_only else ''}{' [admin]' if admin else ''}."
    )
    out.print(secret)
    note("Store it now: it is not shown again. Send it as 'Authorization: Bearer <key>'.")


@keys_app.command("list", epilog=examples("memloci keys list", "memloci keys list --all --json"))
def keys_list(
    include_revoked: Annotated[bool, typer.Option("--all", help="Include revoked keys.")] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List API keys (never their secrets)."""
    with open_memory(db, None, None, must_exist=True) as m:
        keys = m._call(m.service.keys.list_keys(include_revoked=include_revoked))
    if as_json:
        emit_json([k.model_dump(mode="json") for k in keys])
        return
    if not keys:
        note("No API keys: the server runs open, on loopback only.")
        return
    table = Table("id", "name", "namespaces", "access", "created", "last used", "revoked")
    for k in keys:
        access = "admin" if k.admin else ("read-write" if k.can_write else "read-only")
        table.add_row(
            k.id,
            k.name,
            ", ".join(k.namespaces),
            access,
            f"{k.created_at:%Y-%m-%d}",
            f"{k.last_used_at:%Y-%m-%d %H:%M}" if k.last_used_at else "never",
            f"{k.revoked_at:%Y-%m-%d}" if k.revoked_at else "",
        )
    out.print(table)


@keys_app.command("revoke", epilog=examples("memloci keys revoke Ab3dE6gH"))
def keys_revoke(
    key_id: Annotated[str, typer.Argument(metavar="ID", help="Key id (from keys list).")],
    db: DbOpt = None,
) -> None:
    """Revoke an API key: requests with it are refused from now on."""
    with open_memory(db, None, None, must_exist=True) as m:
        key = m._call(m.service.keys.revoke_key(key_id))
    say(f"Revoked key {key.id} ({key.name}).")
