"""The isolation matrix over REST: namespaces × users × API keys × every ``/api``
operation the app serves (enumerated from the app, so a new route is probed — or the
probe fails and asks for a body — without editing this file).

Seeded: team-a and team-b, users u1 and u2 in each, every record kind carrying a
marker. Then, on a real server (uvicorn on loopback) with keys bound to one namespace:

- no key → 401 everywhere; team-b's key on team-a → 403 (or, for the routes without a
  namespace, 403 for non-admin routes);
- team-b's key with team-a's ids (paths and bodies) → an error, no team-a marker;
- team-b's key on its own data as user u2 → works, and no team-a marker, and no u1
  marker wherever the route filters by user;
- afterwards team-a's data is exactly as it was, and the markers are really there.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from matrix import (
    NAMESPACES,
    USERS,
    Ids,
    Route,
    api_routes,
    body_for,
    import_body,
    leaked,
    marker,
    path_for,
    seed,
    sent_strings,
    victims,
)

from memloci import Memory
from memloci.interfaces.rest import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interfaces"))
from rest_server import client, running

pytestmark = pytest.mark.reliability
A, B = NAMESPACES
# Routes that need no namespace: what a team-b (non-admin) key gets from them.
NO_NAMESPACE = {
    "GET /api/v1/namespaces": 200,
    "POST /api/v1/maintain": 403,
    "GET /api/v1/keys/": 403,
    "POST /api/v1/keys/": 403,
    "DELETE /api/v1/keys/{key_id}": 403,
}


class World:
    def __init__(self, mem: Memory, base: str) -> None:
        svc = mem.service
        self.base = base
        with client(base) as open_http:  # no key exists yet: the server is open
            self.seeded = {(ns, u): seed(open_http, ns, u) for ns in NAMESPACES for u in USERS}
        self.admin_key, self.admin = mem._call(svc.keys.create_key("admin", ["*"], admin=True))
        self.key_a, self.secret_a = mem._call(svc.keys.create_key("team-a", [A]))
        self.key_b, self.secret_b = mem._call(svc.keys.create_key("team-b", [B]))
        self.probes = 0
        self.findings: list[str] = []  # leaks
        self.unexpected: list[str] = []  # wrong status codes
        self.shown: dict[str, int] = {}  # marker -> own-data responses that show it

    def send(
        self, route: Route, key: str | None, namespace: str | None, ids: Ids, user: str
    ) -> tuple[httpx.Response, set[str]]:
        path = path_for(route, ids)
        params: dict[str, Any] = {}
        if namespace is not None and "namespace" in route.query:
            params["namespace"] = namespace
        if "user" in route.query:
            params["user"] = user
        if "q" in route.query and route.method == "GET" and route.path.endswith("search"):
            params["q"] = "teal bicycle garage"
        body = body_for(route, ids, user)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        content = None
        if route.raw_body:
            content, headers["Content-Type"] = import_body(), "application/x-ndjson"
        with httpx.Client(base_url=self.base, timeout=30) as http:
            response = http.request(
                route.method, path, params=params, json=body, content=content, headers=headers
            )
        self.probes += 1
        return response, sent_strings(path, params, body)

    def forbid(
        self, what: str, response: httpx.Response, forbidden: list[str], sent: set[str]
    ) -> None:
        found = leaked(response.text, forbidden, sent)
        if found:
            self.findings.append(
                f"{what} -> {response.status_code} shows {found}: {response.text[:300]}"
            )

    def check_own(
        self, route: Route, response: httpx.Response, sent: set[str], other_user_mark: str
    ) -> None:
        """A team-b call on team-b's own data as u2: it works, shows nothing of team-a,
        and nothing of u1 where the route reads or writes for a user."""
        want = NO_NAMESPACE.get(route.name, 200)
        if (response.status_code >= 300) != (want >= 300):
            self.unexpected.append(
                f"{route.name} team-b own data -> {response.status_code}: {response.text[:200]}"
            )
        for mark in leaked(response.text, [marker(B, u) for u in USERS], sent):
            self.shown[mark] = self.shown.get(mark, 0) + 1
        forbidden = a_marks()
        by_user = "user" in route.query or (
            route.body is not None and "user" in route.body.model_fields
        )
        if by_user or route.name in USER_FILTERED_POSTS:
            forbidden = [*forbidden, other_user_mark]
        self.forbid(f"{route.name} (team-b, user u2)", response, forbidden, sent)


@pytest.fixture
def world(mem: Memory) -> Iterator[World]:
    with running(mem.service) as base:
        yield World(mem, base)


def a_marks() -> list[str]:
    return [marker(A, u) for u in USERS]


def export(base: str, key: str, namespace: str) -> list[str]:
    with client(base, key) as http:
        response = http.get("/api/v1/export", params={"namespace": namespace, "vectors": False})
    assert response.status_code == 200, response.text
    return sorted(response.text.splitlines()[1:])  # without the header (export time)


def test_every_route_keeps_namespaces_and_users_apart(world: World, mem: Memory) -> None:
    routes = api_routes(create_app(mem.service, maintenance=False, mcp=False))
    assert len(routes) >= 40
    sa, sb1, sb2 = world.seeded[(A, "u1")], world.seeded[(B, "u1")], world.seeded[(B, "u2")]
    before = export(world.base, world.secret_a, A)
    text_a = "\n".join(before)
    assert all(m in text_a for m in a_marks()), "the team-a seeds are not in its export"
    own = Ids.of(sb2, world.key_b.id)
    foreign = Ids.of(sa, world.key_a.id)

    for route in routes:
        # 1. no key at all
        response, _ = world.send(route, None, B, own, "u2")
        if response.status_code != 401:
            world.unexpected.append(f"{route.name} without a key -> {response.status_code}")
        # 2. team-b's key asking for team-a
        response, sent = world.send(route, world.secret_b, A, foreign, "u1")
        want = NO_NAMESPACE.get(route.name, 403)
        if "namespace" in route.query and response.status_code != 403:
            world.unexpected.append(f"{route.name} team-b key on team-a -> {response.status_code}")
        elif "namespace" not in route.query and response.status_code != want:
            world.unexpected.append(
                f"{route.name} team-b key -> {response.status_code} (want {want})"
            )
        world.forbid(f"{route.name} (team-b key on team-a)", response, a_marks(), sent)
    # 3. team-b's key, in team-b, with team-a's ids: refused, nothing shown
    for route in routes:
        if not route.takes_ids:
            continue
        response, sent = world.send(route, world.secret_b, B, foreign, "u2")
        if response.status_code < 400:
            world.unexpected.append(
                f"{route.name} with team-a ids in team-b -> {response.status_code}"
            )
        world.forbid(f"{route.name} (team-a ids in team-b)", response, a_marks(), sent)
    # 4. team-b's key on its own data, as user u2 (destructive routes last)
    with client(world.base, world.secret_b) as http:
        for n, route in enumerate(routes):
            ids = victims(http, B, "u2", n, own.key) if route.destructive else own
            response, sent = world.send(route, world.secret_b, B, ids, "u2")
            world.check_own(route, response, sent, sb1.mark)

    assert not world.findings, "\n".join(world.findings)
    assert not world.unexpected, "\n".join(world.unexpected)
    assert export(world.base, world.secret_a, A) == before, "team-a changed"
    # the probes reached real data: team-b's own responses show both of its users
    u1, u2 = world.shown.get(sb1.mark, 0), world.shown.get(sb2.mark, 0)
    assert u1 > 0 and u2 > 0, world.shown
    print(
        f"\nisolation matrix (REST): {len(routes)} operations, {world.probes} probes, 0 leaks; "
        f"team-b's own responses showed u2's marker {u2} times, u1's {u1} times"
    )


# POST routes that read on behalf of a user: u1's memories must not answer u2.
USER_FILTERED_POSTS = {
    "POST /api/v1/search",
    "POST /api/v1/context",
    "POST /api/v1/chat-command",
}


def test_a_key_cannot_reach_other_namespaces_through_a_body(world: World) -> None:
    with client(world.base, world.secret_b) as http:
        search = http.post(
            "/api/v1/search",
            params={"namespace": B},
            json={"query": "teal bicycle", "namespaces": [A, B]},
        )
        listing = http.get("/api/v1/namespaces")
        stats = http.get("/api/v1/stats", params={"namespace": B})
    assert search.status_code == 403 and not leaked(search.text, a_marks())
    assert listing.status_code == 200 and listing.json() == [B]
    assert stats.status_code == 200 and A not in stats.text
