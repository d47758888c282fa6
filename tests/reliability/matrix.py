"""The isolation matrix's world: two namespaces × two users, each with distinctive
marker strings in every kind of record (facts, episodes, procedures, turns, versioned
memories, people, threads, entities and their links), seeded through the REST API.

A marker is a nonsense token (``zqx`` + namespace letter + user + ``qxz``) that no
response may contain unless the caller may see that (namespace, user). Responses may
echo what the caller itself sent: :func:`leaked` removes those strings before it looks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.routing import APIRoute

NAMESPACES = ("team-a", "team-b")
USERS = ("u1", "u2")
PATH_PARAM = re.compile(r"{([a-z_]+)(?::[a-z_]+)?}")


def marker(namespace: str, user: str) -> str:
    return f"zqx{namespace[-1]}{user}qxz"


@dataclass
class Seeded:
    """Ids of what one (namespace, user) owns."""

    namespace: str
    user: str
    fact: str = ""
    episode: str = ""
    procedure: str = ""
    memory: str = ""  # created through the versioned /api/memory API
    entity: str = ""
    thread: str = ""
    turns: list[str] = field(default_factory=list)

    @property
    def mark(self) -> str:
        return marker(self.namespace, self.user)


def _ok(response: httpx.Response) -> Any:
    assert response.status_code < 300, (response.request.url, response.text)
    return response.json()


def seed(http: httpx.Client, namespace: str, user: str) -> Seeded:
    """Write one (namespace, user)'s records; every text carries its marker."""
    s, m, q = Seeded(namespace, user), marker(namespace, user), {"namespace": namespace}
    s.fact = _ok(
        http.post(
            "/api/v1/facts/",
            params=q,
            json={
                "content": f"{m} keeps the teal bicycle in the garage",
                "user": user,
                "key": f"bicycle_{m}",
                "subject": f"{m} person",
                "metadata": {"note": m},
            },
        )
    )["memory"]["id"]
    s.episode = _ok(
        http.post(
            "/api/v1/episodes/",
            params=q,
            json={
                "content": f"{m} repaired the teal bicycle",
                "user": user,
                "metadata": {"note": m},
            },
        )
    )["memory"]["id"]
    s.procedure = _ok(
        http.post(
            "/api/v1/procedures/",
            params=q,
            json={
                "content": f"When {m} asks about the teal bicycle, look in the garage first",
                "user": user,
                "scope": "user",
            },
        )
    )["memory"]["id"]
    s.memory = _ok(
        http.post(
            "/api/memory/",
            params=q,
            json={
                "content": f"{m} prefers the teal bicycle saddle",
                "category": "preference",
                "user": user,
                "subject": f"{m} saddle",
            },
        )
    )["id"]
    turns = _ok(
        http.post(
            "/api/v1/turns/",
            params=q,
            json={
                "messages": [
                    {"role": "user", "content": f"I rode the teal bicycle with {m.title()} Smith"},
                    {"role": "assistant", "content": f"Noted: {m} rides the teal bicycle"},
                ],
                "user": user,
                "session": f"s-{m}",
            },
        )
    )
    s.turns = [t["id"] for t in turns] if isinstance(turns, list) else []
    _ok(
        http.post(
            "/api/v1/memory-users/",
            params=q,
            json={
                "id": user,
                "display_name": f"{m} name",
                "identifiers": {"chat": f"{m}-handle"},
                "preferences": {"colour": f"teal {m}"},
            },
        )
    )
    s.thread = f"t{namespace[-1]}{user}"
    _ok(
        http.post(
            f"/api/v1/checkpoints/{s.thread}/messages",
            params=q,
            json={
                "messages": [{"role": "user", "content": f"{m} asked about the teal bicycle"}],
                "user": user,
            },
        )
    )
    s.entity = _ok(
        http.post(
            "/api/v1/entities/",
            params=q,
            json={
                "name": f"{m.title()} Cycles",
                "type": "organization",
                "aliases": [f"{m} shop"],
                "summary": f"the bicycle shop of {m}",
                "attributes": {"owner": m},
            },
        )
    )["id"]
    _ok(http.post(f"/api/v1/entities/{s.entity}/links", params=q, json={"memory_ids": [s.fact]}))
    return s


# ---------------------------------------------------------------------- the routes
@dataclass(frozen=True)
class Route:
    method: str
    path: str
    query: frozenset[str]  # query parameter names
    body: type[Any] | None  # the pydantic body model, if any
    raw_body: bool  # reads the request body itself (import)

    @property
    def params(self) -> list[str]:
        return PATH_PARAM.findall(self.path)

    @property
    def destructive(self) -> bool:
        """Removes records (run last, each on fresh records of its own)."""
        ends = ("batch-delete", "/merge", "/forget", "/purge")
        return self.method == "DELETE" or self.path.rstrip("/").endswith(ends)

    @property
    def takes_ids(self) -> bool:
        """Whether the request names existing records (that another namespace's ids must
        not reach). Users are named by the caller (the same person id may exist in two
        namespaces) and posting to a thread creates it, so neither counts."""
        if {"memory_id", "entity_id"} & set(self.params):
            return True
        if "thread_id" in self.params and not self.path.endswith("/messages"):
            return True
        names = ("BatchDelete", "IdsBody", "LinksBody")
        return bool(self.body and self.body.__name__ in names and "/memory-users/" not in self.path)

    @property
    def name(self) -> str:
        return f"{self.method} {self.path}"


def _api_routes(routes: Iterable[Any]) -> Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif hasattr(route, "original_router"):  # FastAPI's included routers
            yield from _api_routes(route.original_router.routes)


def _query(dependant: Any) -> set[str]:
    names = {p.name for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query(sub)
    return names


def api_routes(app: FastAPI) -> list[Route]:
    """Every ``/api`` operation the app serves (hidden aliases included), reads first,
    then writes, then deletes (so the probes that remove records run last)."""
    found: dict[tuple[str, str], Route] = {}
    for route in _api_routes(app.routes):
        if not route.path.startswith("/api/"):
            continue
        body = route.body_field.field_info.annotation if route.body_field else None
        raw = body is None and "request" in route.endpoint.__code__.co_varnames
        for method in sorted(route.methods or ()):
            if method == "HEAD":
                continue
            found[(method, route.path)] = Route(
                method,
                route.path,
                frozenset(_query(route.dependant)),
                body,
                raw and method == "POST",
            )
    order = {"GET": 0, "POST": 1, "PUT": 1, "PATCH": 1, "DELETE": 2}
    return sorted(found.values(), key=lambda r: (r.destructive, order[r.method], r.path))


def victims(http: httpx.Client, namespace: str, user: str, n: int, key: str) -> Ids:
    """Fresh records for one destructive probe to remove."""
    q, text = {"namespace": namespace}, f"Victim record number {n} about a red kayak"
    ids = [
        _ok(http.post(f"/api/v1/{kind}/", params=q, json={"content": text, "user": user}))[
            "memory"
        ]["id"]
        for kind in ("facts", "episodes", "procedures")
    ]
    memory = _ok(
        http.post(
            "/api/memory/",
            params=q,
            json={"content": text, "category": "context", "user": user, "allow_similar": True},
        )
    )["id"]
    entity = _ok(http.post("/api/v1/entities/", params=q, json={"name": f"Victim {n}"}))["id"]
    thread = f"victim{n}"
    _ok(
        http.post(
            f"/api/v1/checkpoints/{thread}/messages",
            params=q,
            json={"messages": [{"role": "user", "content": text}], "user": user},
        )
    )
    _ok(http.post("/api/v1/memory-users/", params=q, json={"id": thread}))
    return Ids(*ids, memory, entity, thread, thread, key)


# ---------------------------------------------------------------------- requests
@dataclass
class Ids:
    """The ids a probe puts in paths and bodies."""

    fact: str
    episode: str
    procedure: str
    memory: str
    entity: str
    thread: str
    user: str
    key: str

    @classmethod
    def of(cls, s: Seeded, key: str) -> Ids:
        return cls(s.fact, s.episode, s.procedure, s.memory, s.entity, s.thread, s.user, key)


def path_for(route: Route, ids: Ids) -> str:
    def value(param: str) -> str:
        if param == "memory_id":
            if "/episodes/" in route.path:
                return ids.episode
            if "/procedures/" in route.path:
                return ids.procedure
            if route.path.startswith("/api/memory/"):
                return ids.memory
            return ids.fact
        by_name = {
            "entity_id": ids.entity,
            "thread_id": ids.thread,
            "user_id": ids.user,
            "key_id": ids.key,
        }
        assert param in by_name, f"no probe value for path parameter {param!r}: add one"
        return by_name[param]

    return PATH_PARAM.sub(lambda m: value(m.group(1)), route.path)


def _generic(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    if "$ref" in schema:
        return _generic(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:
        return _generic(next(s for s in schema["anyOf"] if s.get("type") != "null"), defs)
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _generic(props[k], defs) for k in schema.get("required", [])}
    return {
        "string": "a probe of the isolation matrix",
        "integer": 1,
        "number": 0.5,
        "boolean": False,
        "array": [],
    }.get(str(kind), {})


def body_for(route: Route, ids: Ids, user: str) -> Any:
    """A valid body for the route (by its model's name; other models get their required
    fields filled from the JSON schema)."""
    if route.body is None:
        return None
    name = route.body.__name__
    text = "The teal bicycle probe keeps its own words here"
    known: dict[str, Any] = {
        "FactCreate": {"content": text, "user": user},
        "EpisodeCreate": {"content": text, "user": user},
        "ProcedureCreate": {"content": text, "user": user},
        "TurnsCreate": {"messages": [{"role": "user", "content": text}], "user": user},
        "NodeUpdate": {"content": f"{text}, edited"},
        "Correction": {"content": f"{text}, corrected"},
        "CreateMemoryRequest": {"content": text, "category": "context", "user": user},
        "UpdateMemoryRequest": {"content": f"{text}, updated"},
        "SearchRequest": {"query": "teal bicycle garage", "user": user},
        "ContextRequest": {"prompt": "teal bicycle garage", "user": user},
        "ChatCommand": {"text": "/memory list", "user": user},
        "UserCreate": {"id": f"probe-{user}", "display_name": "Probe person"},
        "UserUpdate": {"display_name": "Probe person renamed"},
        "MergeBody": {"into": user},
        "MessagesBody": {"messages": [{"role": "user", "content": text}], "user": user},
        "EntityCreate": {"name": "Probe Entity", "type": "organization"},
        "EntityUpdate": {"summary": "renamed by the probe"},
        "LinksBody": {"memory_ids": [ids.fact]},
        "KeyCreate": {"name": "probe", "namespaces": ["team-b"]},
    }
    if name in ("BatchDelete", "IdsBody"):
        if "/memory-users/" in route.path:
            return {"ids": [ids.user]}
        if "/entities/" in route.path:
            return {"ids": [ids.entity]}
        if "/checkpoints/" in route.path or "/threads/" in route.path:
            return {"ids": [ids.thread]}
        if "/episodes/" in route.path:
            return {"ids": [ids.episode]}
        if "/procedures/" in route.path:
            return {"ids": [ids.procedure]}
        return {"ids": [ids.fact]}
    if name in known:
        return known[name]
    return _generic(route.body.model_json_schema(), route.body.model_json_schema().get("$defs", {}))


def import_body() -> str:
    """A small JSON Lines import with fresh ids and no marker."""
    header = {"kind": "header", "format": "memloci", "version": 1, "namespace": "probe"}
    now = "2024-01-01T00:00:00+00:00"
    node = {
        "id": "Pr0beIm1",
        "type": "semantic",
        "content": "An imported probe fact",
        "event_time": now,
        "created_at": now,
        "updated_at": now,
        "valid_from": now,
    }
    return "\n".join([json.dumps(header), json.dumps({"kind": "node", "node": node})]) + "\n"


def sent_strings(*parts: Any) -> set[str]:
    """Every string the caller sent (path segments, query values, body leaves)."""
    out: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.update(p for p in re.split(r"[/?&=]", value) if len(p) >= 6)
            out.add(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    for part in parts:
        walk(part)
    return {s for s in out if len(s) >= 6}


def leaked(text: str, forbidden: Iterable[str], sent: Iterable[str] = ()) -> list[str]:
    """The forbidden markers found in ``text`` once the caller's own strings are removed."""
    for s in sorted(sent, key=len, reverse=True):
        text = text.replace(s, "")
    low = text.lower()
    return [m for m in forbidden if m.lower() in low]
