"""Request dependencies (layer: interfaces): the service, the caller's API key, namespaces.

Access rule: a server that listens on loopback and whose store never had an API key
is open. Once any key was ever created in the store (a persistent marker: revoking
every key does not open the server again) and always on a non-loopback address, every
API request must carry a valid key (``Authorization: Bearer <key>`` or ``X-API-Key``)
and may only read — or, for write keys, write — the namespaces the key lists. Managing
keys needs an admin key, also on an open server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Query, Request

from memloci.errors import PermissionDeniedError, UnauthorizedError, ValidationError
from memloci.interfaces.rest.security import REQUIRE_KEY, request_note
from memloci.models import check_namespace
from memloci.service import MemoryService


def get_service(request: Request) -> MemoryService:
    service: MemoryService = request.app.state.service
    return service


Service = Annotated[MemoryService, Depends(get_service)]


@dataclass(frozen=True)
class Caller:
    """Who is calling: ``key`` is None when the server runs open (no key ever existed)."""

    key: Any = None  # memloci.models.ApiKey

    @property
    def admin(self) -> bool:
        return self.key is None or bool(self.key.admin)

    def check(self, namespace: str, *, write: bool) -> str:
        ns = check_namespace(namespace)
        if self.key is not None and not self.key.allows(ns, write):
            verb = "write" if write else "read"
            raise PermissionDeniedError(
                f"this API key may not {verb} namespace {ns!r}",
                hint="use a key created for that namespace (memloci keys create)",
            )
        return ns

    def require_admin(self, *, key: bool = False) -> None:
        """Refuse a caller without admin rights; ``key``: an open server's anonymous
        caller is not enough either (API keys are minted only with an admin key)."""
        if key and self.key is None:
            raise UnauthorizedError(
                "managing API keys needs an admin API key",
                hint="create one on the server's machine: memloci keys create NAME --admin",
            )
        if not self.admin:
            raise PermissionDeniedError(
                "this endpoint needs an admin API key", hint="memloci keys create --admin"
            )


def _secret(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return request.headers.get("x-api-key") or None


async def get_caller(request: Request, service: Service) -> Caller:
    secret = _secret(request)
    if secret is None:
        if request.scope.get(REQUIRE_KEY) or await service.keys.auth_required():
            raise UnauthorizedError(
                "this server requires an API key",
                hint="send 'Authorization: Bearer <key>' (memloci keys create)",
            )
        return Caller()
    key = await service.keys.verify_key(secret)
    if key is None:
        raise UnauthorizedError("unknown or revoked API key", hint="memloci keys list")
    return Caller(key)


CallerDep = Annotated[Caller, Depends(get_caller)]
NamespaceQuery = Annotated[
    str | None, Query(description="namespace (default: the server's configured namespace)")
]


def _or_default(namespace: str | None, service: MemoryService) -> str:
    """The asked namespace (an empty one is invalid, not the default) or the server's."""
    return service.settings.namespace if namespace is None else namespace


def noted(request: Request, namespace: str) -> str:
    """``namespace``, recorded as the one the request uses (for its access-log line)."""
    note = request_note(request.scope)
    if note is not None:
        note.namespace = namespace
    return namespace


async def read_namespace(
    request: Request, caller: CallerDep, service: Service, namespace: NamespaceQuery = None
) -> str:
    return noted(request, caller.check(_or_default(namespace, service), write=False))


async def write_namespace(
    request: Request, caller: CallerDep, service: Service, namespace: NamespaceQuery = None
) -> str:
    return noted(request, caller.check(_or_default(namespace, service), write=True))


ReadNS = Annotated[str, Depends(read_namespace)]
WriteNS = Annotated[str, Depends(write_namespace)]


def _query_names(dependant: Any) -> set[str]:
    """The query parameters an endpoint takes, its dependencies' included."""
    names: set[str] = set()
    stack = [dependant]
    while stack:
        dep = stack.pop()
        names.update(f.alias for f in dep.query_params)
        stack.extend(dep.dependencies)
    return names


async def known_query(request: Request) -> None:
    """Refuse a query parameter the endpoint does not take: ``GET /facts/?usr=u1`` is a
    typo, and ignoring it would list every user's facts."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    allowed = _query_names(dependant)
    unknown = sorted(set(request.query_params) - allowed)
    if unknown:
        takes = ", ".join(sorted(allowed)) or "none"
        raise ValidationError(
            f"unknown query parameter {unknown[0]!r}",
            hint=f"this endpoint takes: {takes}",
            errors=[{"field": name, "problem": "unknown query parameter"} for name in unknown],
        )


KnownQuery = Depends(known_query)
