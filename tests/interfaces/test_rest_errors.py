"""Bad input over real HTTP: one JSON error shape, a clear 4xx, nothing written; API keys
and namespace isolation; the refusal to serve an open API on a public interface."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_server import client, running

from memloci import Memory
from memloci.errors import PermissionDeniedError
from memloci.interfaces.cli_server import guard_public, is_loopback


def assert_error_shape(r: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"}
    err = body["error"]
    assert set(err) <= {"code", "message", "hint", "details"}
    assert isinstance(err["code"], str) and isinstance(err["message"], str) and err["message"]
    if code:
        assert err["code"] == code
    return dict(err)


def _written(mem: Memory) -> int:
    return mem.count(include_forgotten=True) + mem.count(namespace="other", include_forgotten=True)


BAD_REQUESTS: list[tuple[str, str, dict[str, Any], int, str]] = [
    ("POST", "/api/v1/facts/", {"content": b"{not json"}, 400, "invalid_input"),
    ("POST", "/api/v1/facts/", {"json": {"content": 42}}, 400, "invalid_input"),
    ("POST", "/api/v1/facts/", {"json": {"content": "hi"}}, 400, "invalid_input"),
    ("POST", "/api/v1/facts/", {"json": {"content": "x" * 501}}, 400, "invalid_input"),
    (
        "POST",
        "/api/v1/facts/",
        {"json": {"content": "Valid fact", "typo": 1}},
        400,
        "invalid_input",
    ),
    (
        "POST",
        "/api/v1/facts/",
        {"json": {"content": "Valid fact", "confidence": 7}},
        400,
        "invalid_input",
    ),
    ("POST", "/api/v1/facts/", {"json": ["a", "list"]}, 400, "invalid_input"),
    (
        "POST",
        "/api/v1/facts/?namespace=Bad_NS",
        {"json": {"content": "Valid fact"}},
        400,
        "invalid_input",
    ),
    ("POST", "/api/v1/episodes/", {"json": {"content": ""}}, 400, "invalid_input"),
    ("POST", "/api/v1/turns/", {"json": {"messages": [{"role": "user"}]}}, 400, "invalid_input"),
    ("POST", "/api/v1/procedures/", {"json": {"content": None}}, 400, "invalid_input"),
    ("GET", "/api/v1/facts/nope1234", {}, 404, "not_found"),
    ("GET", "/api/v1/facts/bad id!", {}, 400, "invalid_input"),
    ("PATCH", "/api/v1/facts/nope1234", {"json": {"content": "New content"}}, 404, "not_found"),
    ("DELETE", "/api/v1/facts/nope1234", {}, 404, "not_found"),
    ("POST", "/api/v1/facts/batch-delete/", {"json": {"ids": []}}, 400, "invalid_input"),
    ("POST", "/api/v1/facts/batch-delete/", {"json": {"ids": "abc"}}, 400, "invalid_input"),
    ("GET", "/api/v1/facts/", {"params": {"limit": 0}}, 400, "invalid_input"),
    ("GET", "/api/v1/facts/", {"params": {"limit": "many"}}, 400, "invalid_input"),
    ("GET", "/api/v1/facts/", {"params": {"order": "random"}}, 400, "invalid_input"),
    ("GET", "/api/v1/facts/", {"params": {"after": "someday"}}, 400, "invalid_input"),
    ("GET", "/api/v1/facts/", {"params": {"type": "episodic"}}, 400, "invalid_input"),
    ("POST", "/api/v1/search", {"json": {"query": ""}}, 400, "invalid_input"),
    ("POST", "/api/v1/search", {"json": {"query": "x", "k": 100000}}, 400, "invalid_input"),
    ("POST", "/api/v1/search", {"json": {"query": "x", "recipe": "magic"}}, 400, "invalid_input"),
    ("POST", "/api/v1/context", {"json": {"budget": -5}}, 400, "invalid_input"),
    ("GET", "/api/v1/memories/nope1234/explain", {}, 404, "not_found"),
    ("POST", "/api/v1/import", {"content": b""}, 400, "invalid_input"),
    ("POST", "/api/v1/import", {"content": b"\xff\xfe"}, 400, "invalid_input"),
    ("GET", "/api/memory/nope1234", {}, 404, "not_found"),
    ("PUT", "/api/memory/nope1234", {"json": {"content": "Updated text"}}, 404, "not_found"),
    ("POST", "/api/memory/", {"json": {"content": "Valid content"}}, 400, "invalid_input"),
    ("GET", "/api/v1/memory-users/nobody", {}, 404, "not_found"),
    ("POST", "/api/v1/memory-users/", {"json": {"display_name": "no id"}}, 400, "invalid_input"),
    ("GET", "/api/v1/checkpoints/nothread", {}, 404, "not_found"),
    ("GET", "/api/v1/entities/nope1234", {}, 404, "not_found"),
    ("POST", "/api/v1/entities/", {"json": {"name": ""}}, 400, "invalid_input"),
    ("GET", "/api/v1/no-such-endpoint", {}, 404, "not_found"),
    ("PUT", "/api/v1/stats", {}, 405, "method_not_allowed"),
]


@pytest.mark.parametrize(("method", "path", "kwargs", "status", "code"), BAD_REQUESTS)
def test_bad_input_is_a_clear_4xx_and_writes_nothing(
    http: httpx.Client, mem: Memory, method: str, path: str, kwargs: dict, status: int, code: str
) -> None:
    if "content" in kwargs or "json" in kwargs:
        kwargs = {**kwargs, "headers": {"content-type": "application/json"}}
    before = _written(mem)
    r = http.request(method, path, **kwargs)
    assert_error_shape(r, status, code)
    assert _written(mem) == before


def test_malformed_json_says_so(http: httpx.Client) -> None:
    r = http.post(
        "/api/v1/facts/", content=b'{"content": ', headers={"content-type": "application/json"}
    )
    assert "not valid JSON" in assert_error_shape(r, 400)["message"]


def test_wrong_type_names_the_field(http: httpx.Client) -> None:
    err = assert_error_shape(http.post("/api/v1/facts/", json={"content": ["a"]}), 400)
    assert "content" in err["message"]


def test_oversized_body_is_refused(mem: Memory) -> None:
    mem.service.settings = mem.service.settings.model_copy(update={"max_request_bytes": 2048})
    with running(mem.service) as base, client(base) as http:
        big = json.dumps({"content": "y" * 5000})
        r = http.post("/api/v1/facts/", content=big, headers={"content-type": "application/json"})
        assert_error_shape(r, 413, "request_too_large")

        def chunks():  # no Content-Length: counted while streaming
            for _ in range(10):
                yield b"z" * 1000

        ndjson = {"content-type": "application/x-ndjson"}
        r = http.post("/api/v1/import", content=chunks(), headers=ndjson)
        assert_error_shape(r, 413, "request_too_large")
    assert mem.count(include_forgotten=True) == 0


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=30),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=10,
    )
)
def test_fuzzed_bodies_never_cause_a_server_error(http: httpx.Client, body: Any) -> None:
    for path in ("/api/v1/facts/", "/api/v1/search", "/api/memory/", "/api/v1/entities/"):
        r = http.post(path, json=body)
        assert r.status_code < 500, (path, body, r.text)
        if r.status_code >= 400:
            assert_error_shape(r, r.status_code)


# ---------------------------------------------------------------- keys and isolation
def test_api_keys_bound_namespaces(mem: Memory) -> None:
    svc = mem.service
    _, writer = mem._call(svc.keys.create_key("writer", ["team-a"]))
    _, reader = mem._call(svc.keys.create_key("reader", ["team-a"], write=False))
    revoked, old = mem._call(svc.keys.create_key("old", ["team-a"]))
    mem._call(svc.keys.revoke_key(revoked.id))
    _, admin = mem._call(svc.keys.create_key("ops", ["*"], admin=True))
    mem.remember("Team B secret plan", namespace="team-b")
    with running(svc) as base:
        with client(base) as anon:
            assert_error_shape(anon.get("/api/v1/facts/"), 401, "unauthorized")
            assert anon.get("/healthz").status_code == 200
        with client(base, "mlk_garbage") as bad:
            assert_error_shape(bad.get("/api/v1/facts/"), 401, "unauthorized")
        with client(base, old) as c:
            assert_error_shape(c.get("/api/v1/facts/", params={"namespace": "team-a"}), 401)
        with client(base, writer) as c:
            ok = c.post(
                "/api/v1/facts/",
                params={"namespace": "team-a"},
                json={"content": "Team A fact stored"},
            )
            assert ok.status_code == 201
            r = c.post(
                "/api/v1/facts/",
                params={"namespace": "team-b"},
                json={"content": "Sneaky write attempt"},
            )
            assert_error_shape(r, 403, "forbidden")
            assert_error_shape(c.get("/api/v1/facts/", params={"namespace": "team-b"}), 403)
            r = c.post(
                "/api/v1/search",
                params={"namespace": "team-a"},
                json={"query": "secret plan", "namespaces": ["team-a", "team-b"]},
            )
            assert_error_shape(r, 403)
            assert_error_shape(c.get("/api/v1/export", params={"namespace": "team-b"}), 403)
            assert_error_shape(c.get("/api/v1/keys/"), 403)
            assert c.get("/api/v1/namespaces").json() == ["team-a"]
            # the default namespace is not the key's either
            assert_error_shape(c.get("/api/v1/facts/"), 403)
        with client(base, reader) as c:
            assert c.get("/api/v1/facts/", params={"namespace": "team-a"}).json()["total"] == 1
            r = c.post(
                "/api/v1/facts/",
                params={"namespace": "team-a"},
                json={"content": "Reader tries to write"},
            )
            assert_error_shape(r, 403)
        with client(base, admin) as c:
            keys = c.get("/api/v1/keys/").json()
            assert {k["name"] for k in keys} == {"writer", "reader", "ops"}
            assert all("hash" not in json.dumps(k) for k in keys)
            made = c.post("/api/v1/keys/", json={"name": "new", "namespaces": ["team-c"]}).json()
            assert made["secret"].startswith("mlk_")
            assert c.delete(f"/api/v1/keys/{made['key']['id']}").json()["revoked_at"]
            assert c.get("/api/v1/facts/", params={"namespace": "team-b"}).json()["total"] == 1
    assert mem.count(namespace="team-b") == 1
    assert mem.count(namespace="team-a") == 1


def test_public_interface_needs_keys() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    with pytest.raises(PermissionDeniedError, match="without API keys"):
        guard_public("0.0.0.0", has_keys=False)
    guard_public("0.0.0.0", has_keys=True)
    guard_public("127.0.0.1", has_keys=False)


def test_a_key_for_two_namespaces_searches_both_named_in_the_body(mem: Memory) -> None:
    """``namespaces`` in a search names what is read: the server's default namespace,
    not read then, needs no permission; every named one (and an explicit ``?namespace``)
    still does."""
    svc = mem.service
    _, both = mem._call(svc.keys.create_key("both", ["team-a", "team-b"], write=False))
    mem.remember("Team A plans the spring offsite", namespace="team-a")
    mem.remember("Team B plans the autumn offsite", namespace="team-b")
    mem.remember("Default plans stay hidden", namespace="default")
    body = {"query": "offsite plans", "namespaces": ["team-a", "team-b"]}
    with running(svc) as base, client(base, both) as c:
        r = c.post("/api/v1/search", json=body)
        assert r.status_code == 200, r.text
        assert {h["memory"]["namespace"] for h in r.json()["hits"]} == {"team-a", "team-b"}
        r = c.post("/api/v1/search", json={**body, "namespaces": ["team-a", "team-c"]})
        assert_error_shape(r, 403, "forbidden")
        assert "team-c" in r.json()["error"]["message"]
        r = c.post("/api/v1/search", params={"namespace": "default"}, json=body)
        assert_error_shape(r, 403, "forbidden")
        assert_error_shape(c.post("/api/v1/search", json={"query": "plans"}), 403)
