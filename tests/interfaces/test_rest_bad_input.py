"""Bad input over HTTP is one 400 in the one error shape and writes nothing (issue 11
items 4 and 8): lone surrogates in any text field, JSON nested hundreds of levels
deep in metadata / values / preferences / attributes, integers past 64 bits and
relative times past the calendar. Afterwards the namespace still lists, searches and
exports."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from memloci import Memory

BAD = "bad \ud800 text"  # sent as the JSON escape "\ud800": valid JSON, invalid Unicode


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def send(http: httpx.Client, method: str, path: str, body: Any = None) -> httpx.Response:
    content = None if body is None else json.dumps(body)  # ensure_ascii keeps "\ud800"
    headers = {"content-type": "application/json"} if body is not None else {}
    return http.request(method, path, content=content, headers=headers)


@pytest.fixture
def seeded(mem: Memory) -> dict[str, str]:
    fact = mem.remember("The seeded fact about the garden shed", user="u1", key="shed")
    assert fact.memory is not None
    asyncio.run(mem.service.save_user("u1", display_name="Uma"))
    return {"fact": fact.memory.id}


def _cases(ids: dict[str, str]) -> list[tuple[str, str, Any]]:
    fid = ids["fact"]
    surrogate = [
        ("POST", "/api/v1/facts/", {"content": BAD}),
        ("POST", "/api/v1/facts/", {"content": "a valid fact text", "key": BAD}),
        ("POST", "/api/v1/facts/", {"content": "a valid fact text", "user": BAD}),
        ("POST", "/api/v1/facts/", {"content": "a valid fact text", "value": {"k": BAD}}),
        ("PATCH", f"/api/v1/facts/{fid}", {"content": BAD}),
        ("POST", f"/api/v1/facts/{fid}/correct", {"content": BAD}),
        ("POST", "/api/v1/episodes/", {"content": BAD}),
        ("POST", "/api/v1/procedures/", {"content": BAD}),
        ("POST", "/api/v1/turns/", {"messages": [{"role": "user", "content": BAD}]}),
        (
            "POST",
            "/api/v1/turns/",
            {"messages": [{"role": "user", "content": "hi"}], "session": BAD},
        ),
        ("POST", "/api/v1/search", {"query": BAD}),
        ("POST", "/api/v1/context", {"prompt": BAD}),
        ("POST", "/api/v1/chat-command", {"text": "hello", "user": BAD}),
        ("POST", "/api/memory/", {"content": BAD, "category": "general"}),
        ("PUT", f"/api/memory/{fid}", {"content": BAD}),
        ("POST", "/api/v1/memory-users/", {"id": BAD}),
        ("POST", "/api/v1/memory-users/", {"id": "u7", "display_name": BAD}),
        ("POST", "/api/v1/memory-users/", {"id": "u7", "identifiers": {"email": BAD}}),
        (
            "POST",
            "/api/v1/checkpoints/t1/messages",
            {"messages": [{"role": "user", "content": BAD}]},
        ),
        ("POST", "/api/v1/entities/", {"name": BAD}),
        ("POST", "/api/v1/entities/", {"name": "Shed", "summary": BAD}),
    ]
    nested = [
        (
            "POST",
            "/api/v1/turns/",
            {"messages": [{"role": "user", "content": "hello"}], "metadata": deep(400)},
        ),
        ("POST", "/api/v1/facts/", {"content": "a valid fact text", "value": deep(300)}),
        ("POST", "/api/v1/facts/", {"content": "a valid fact text", "value": [deep(900)]}),
        ("POST", "/api/v1/facts/", {"content": "a valid fact text", "metadata": deep(300)}),
        ("PATCH", f"/api/v1/facts/{fid}", {"metadata": deep(300)}),
        ("POST", "/api/v1/procedures/", {"content": "a valid procedure", "triggers": deep(300)}),
        ("POST", "/api/v1/memory-users/", {"id": "u7", "preferences": deep(500)}),
        ("PATCH", "/api/v1/memory-users/u1", {"preferences": deep(900)}),
        ("POST", "/api/v1/entities/", {"name": "Shed", "attributes": deep(300)}),
        (
            "POST",
            "/api/v1/checkpoints/t1/messages",
            {"messages": [{"role": "user", "content": "hi", "metadata": deep(300)}]},
        ),
    ]
    overflow = [
        ("GET", "/api/v1/facts/?offset=100000000000000000000", None),
        ("GET", "/api/v1/facts/?limit=100000000000000000000", None),
        ("GET", "/api/v1/facts/?after=99999999999d", None),
        ("GET", "/api/v1/episodes/?before=99999999999w", None),
        ("GET", "/api/memory/?offset=100000000000000000000", None),
        ("GET", "/api/v1/memory-users/?offset=100000000000000000000", None),
        ("GET", "/api/v1/entities/?offset=100000000000000000000", None),
        ("GET", "/api/v1/checkpoints/?offset=100000000000000000000", None),
        ("GET", "/api/v1/search?q=shed&k=100000000000000000000", None),
        ("POST", "/api/v1/search", {"query": "shed", "after": "99999999999d"}),
        ("POST", "/api/v1/search", {"query": "shed", "k": 10**20}),
        ("POST", "/api/v1/context", {"prompt": "shed", "budget": 10**20}),
        ("POST", "/api/v1/facts/", {"content": "a valid fact text", "value": 10**20}),
        ("POST", "/api/v1/facts/", {"content": "a valid fact text", "event_time": "99999999999d"}),
        (
            "POST",
            "/api/v1/episodes/",
            {"content": "an episode text", "event_time": "9999-12-31T23:00:00-05:00"},
        ),
    ]
    return surrogate + nested + overflow


def _snapshot(mem: Memory) -> tuple[Any, ...]:
    stats = mem.stats()
    threads = mem.service.store.count_threads("default")
    return stats.nodes_by_type, stats.edges_by_type, stats.entities, stats.users, threads


def test_bad_input_is_one_400_and_writes_nothing(
    http: httpx.Client, mem: Memory, seeded: dict[str, str]
) -> None:
    before = _snapshot(mem)
    history = len(mem.history(seeded["fact"]))
    failures = []
    for method, path, body in _cases(seeded):
        r = send(http, method, path, body)
        if r.status_code != 400:
            failures.append(f"{method} {path}: {r.status_code} {r.text[:200]}")
            continue
        err = r.json()["error"]
        if err["code"] != "invalid_input" or not err["message"]:
            failures.append(f"{method} {path}: {err}")
    assert not failures, "\n".join(failures)
    # a chat command answers in chat: the problem is the reply, the status 200
    r = send(http, "POST", "/api/v1/chat-command", {"text": "/memory search " + BAD})
    assert r.status_code == 200 and "unpaired surrogate" in r.json()["answer"]
    assert _snapshot(mem) == before
    assert len(mem.history(seeded["fact"])) == history
    # the namespace keeps working over the same server
    listed = http.get("/api/v1/facts/")
    assert listed.status_code == 200
    assert http.post("/api/v1/search", json={"query": "garden shed"}).status_code == 200
    exported = http.get("/api/v1/export")
    assert exported.status_code == 200
    assert "garden shed" in exported.text
