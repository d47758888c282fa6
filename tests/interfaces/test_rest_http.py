"""HTTP semantics of the server over real HTTP: ``HEAD`` is answered wherever ``GET`` is,
with the same status and headers and no body; a 405 lists ``HEAD`` beside ``GET``."""

from __future__ import annotations

import httpx
import pytest

from memloci import Memory

PAGES = ["/healthz", "/api/v1/facts/", "/api/v1/stats", "/api/memory/", "/openapi.json",
         "/docs", "/memories", "/static/app.js"]  # fmt: skip


@pytest.mark.parametrize("path", PAGES)
def test_head_answers_as_get_without_a_body(http: httpx.Client, path: str) -> None:
    got = http.get(path)
    head = http.head(path)
    assert got.status_code == 200, got.text
    assert head.status_code == 200, head.text
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    if "content-length" in got.headers and path != "/api/v1/stats":  # stats: size changes
        assert head.headers["content-length"] == got.headers["content-length"]


def test_head_of_one_memory_and_of_an_unknown_one(http: httpx.Client, mem: Memory) -> None:
    fact = mem.remember("Sam drinks green tea every morning")
    assert http.head(f"/api/v1/facts/{fact.memory.id}").status_code == 200
    missing = http.head("/api/v1/facts/zz12zz12")
    assert missing.status_code == 404 and missing.content == b""
    assert http.head("/").status_code == 307  # the root sends to the UI, as GET does


def test_405_lists_head_with_get_and_names_the_method_asked(http: httpx.Client) -> None:
    r = http.put("/api/v1/stats")
    assert r.status_code == 405
    assert r.headers["allow"] == "GET, HEAD"
    r = http.head("/api/v1/facts/batch-delete/")
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    r = http.request("HEAD", "/api/v1/facts/batch-delete/", headers={"Accept": "*/*"})
    assert r.content == b""
    r = http.get("/api/v1/facts/batch-delete/")
    assert r.status_code == 405 and r.json()["error"]["message"].startswith("GET is not")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/v1/memory-users/sam/forget/", None),
        ("POST", "/api/v1/memory-users/sam/merge/", {"into": "al"}),
        ("POST", "/api/v1/checkpoints/chat-1/messages/", {"messages": []}),
        ("POST", "/api/v1/facts/abcd1234/confirm/", None),
    ],
)
def test_a_trailing_slash_is_sent_to_the_route_without_it(
    http: httpx.Client, method: str, path: str, body: object
) -> None:
    r = http.request(method, path, json=body)
    assert r.status_code == 307, r.text
    assert r.headers["location"].endswith(path.rstrip("/"))


def test_the_documented_list_limit_is_the_one_enforced(http: httpx.Client) -> None:
    assert http.get("/api/v1/facts/", params={"limit": 10_000}).status_code == 200
    assert http.get("/api/v1/facts/", params={"limit": 10_001}).status_code == 400
    spec = http.get("/openapi.json").json()
    for path in ("/api/v1/facts/", "/api/v1/episodes/", "/api/v1/procedures/"):
        (limit,) = [p for p in spec["paths"][path]["get"]["parameters"] if p["name"] == "limit"]
        assert limit["schema"]["maximum"] == 10_000
        assert "10,000" in limit["description"] and "500" not in limit["description"]
