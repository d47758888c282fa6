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
    asyncio.run(mem.service.records.save_user("u1", display_name="Uma"))
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
    threads = mem.service.store.people.count_threads("default")
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


def _procedure(triggers: Any) -> tuple[str, str, Any]:
    return ("POST", "/api/v1/procedures/", {"content": "Always be kind", "triggers": triggers})


def _checkpoint(*messages: Any) -> tuple[str, str, Any]:
    return ("POST", "/api/v1/checkpoints/t1/messages", {"messages": list(messages)})


LAX = [  # values pydantic's lax mode would coerce, unknown names: each must be a 400
    ("POST", "/api/v1/search", {"query": "shed", "k": True}),
    ("POST", "/api/v1/search", {"query": "shed", "k": "5"}),
    ("POST", "/api/v1/search", {"query": "shed", "k": 5.5}),
    ("POST", "/api/v1/search", {"query": "shed", "min_confidence": True}),
    ("POST", "/api/v1/search", {"query": "shed", "min_confidence": "0.5"}),
    ("POST", "/api/v1/facts/", {"content": "a valid fact text", "confidence": True}),
    ("POST", "/api/v1/facts/", {"content": "a valid fact text", "confidence": "1"}),
    ("POST", "/api/v1/context", {"prompt": "shed", "budget": True}),
    ("POST", "/api/v1/context", {"prompt": "shed", "budget": "500"}),
    ("GET", "/api/v1/facts/?usr=u1", None),  # a typo is not "no filter"
    ("GET", "/api/v1/search?q=shed&kk=3", None),
    ("GET", "/api/memory/?usr=u1", None),
    ("GET", "/api/v1/memory-users/?query=sam", None),
    ("POST", "/api/v1/turns/", {"messages": [{"role": "user", "content": "t", "extra": 1}]}),
    ("POST", "/api/v1/turns/", {"messages": [{"role": "user", "content": "t", "speaker": "x"}]}),
    _procedure({"bogus": ["x"]}),
    _procedure({"goal_contain": ["deploy"]}),  # a typo must not make it always-on
    _procedure({"goal_contains": [1, 2]}),
    _procedure({"goal_contains": []}),
    _procedure({"goal_contains": ["  "]}),
    _checkpoint({"role": "user", "content": ""}),
    _checkpoint({"role": "user", "content": "   "}),
    _checkpoint({"role": "system", "content": "be brief"}),
    _checkpoint(),
    _checkpoint({"role": "user", "content": "a\x00b"}),
    ("POST", "/api/v1/episodes/", {"content": "ran the job", "details": {"duration_ms": "slow"}}),
    ("POST", "/api/v1/episodes/", {"content": "ran the job", "details": {"outcom": {}}}),
]


def test_strict_types_unknown_parameters_and_fields_are_400s(
    http: httpx.Client, mem: Memory, seeded: dict[str, str]
) -> None:
    before = _snapshot(mem)
    failures = []
    for method, path, body in LAX:
        r = send(http, method, path, body)
        if r.status_code != 400 or r.json()["error"]["code"] != "invalid_input":
            failures.append(f"{method} {path} {body}: {r.status_code} {r.text[:200]}")
    assert not failures, "\n".join(failures)
    assert _snapshot(mem) == before
    assert http.get("/api/v1/checkpoints/t1").status_code == 404  # no empty thread either
    # the messages name the problem plainly
    r = send(http, "GET", "/api/v1/facts/?usr=u1")
    assert "unknown query parameter 'usr'" in r.json()["error"]["message"]
    assert "user" in r.json()["error"]["hint"]
    nul = {"messages": [{"role": "user", "content": "a\x00b"}]}
    r = send(http, "POST", "/api/v1/checkpoints/t1/messages", nul)
    assert "NUL" in r.json()["error"]["message"]
    r = send(http, "POST", "/api/v1/episodes/", {"content": "ran", "details": {"duration_ms": "x"}})
    message = r.json()["error"]["message"]
    assert "details.duration_ms" in message and "pydantic" not in message, message
    bogus = {"content": "Always be kind", "triggers": {"bogus": ["x"]}}
    r = send(http, "POST", "/api/v1/procedures/", bogus)
    assert "unknown trigger 'bogus'" in r.json()["error"]["message"]
    # the good forms still work
    ok = [
        ("POST", "/api/v1/search", {"query": "shed", "k": 5, "min_confidence": 0}),
        # a number with no fraction is an integer (JSON Schema says so; the document's
        # "integer" allows it, so the service takes it)
        ("POST", "/api/v1/search", {"query": "shed", "k": 5.0}),
        ("POST", "/api/v1/context", {"prompt": "shed", "budget": 500}),
        ("GET", "/api/v1/facts/?user=u1&limit=5", None),
        ("POST", "/api/v1/facts/", {"content": "another valid fact", "confidence": 1}),
    ]
    for method, path, body in ok:
        assert send(http, method, path, body).status_code in (200, 201), path


def test_triggered_procedures_over_rest(http: httpx.Client, mem: Memory) -> None:
    body = {"content": "Run the tests before deploying", "triggers": {"goal_contains": ["deploy"]}}
    r = send(http, "POST", "/api/v1/procedures/", body)
    assert r.status_code == 201, r.text
    ctx = send(http, "POST", "/api/v1/context", {"prompt": "what should I cook"}).json()
    assert "Run the tests" not in ctx["context"]
    ctx = send(http, "POST", "/api/v1/context", {"prompt": "deploy the app"}).json()
    assert "Run the tests" in ctx["context"]
    # the same text with other triggers: the known procedure changes, as a new version
    again = {"content": body["content"], "triggers": {"goal_contains": ["release"]}}
    r = send(http, "POST", "/api/v1/procedures/", again)
    assert r.status_code in (200, 201) and r.json()["action"] == "updated", r.text
    assert r.json()["memory"]["procedure"]["triggers"] == {"goal_contains": ["release"]}
    assert r.json()["memory"]["version"] == 2
    assert mem.count(type="procedural") == 1


@pytest.mark.parametrize(
    "body",
    [
        {"content": None},
        {"subject": None},
        {"category": None},
        {"content": "x y z", "metadata": None},
    ],
)
def test_a_patch_field_sent_as_null_is_refused_not_ignored(
    http: httpx.Client, mem: Memory, seeded: dict[str, str], body: dict[str, Any]
) -> None:
    """Before, ``{"subject": null}`` answered 200 "updated" and changed nothing."""
    history = len(mem.history(seeded["fact"]))
    r = http.patch(f"/api/v1/facts/{seeded['fact']}", json=body)
    assert r.status_code in (400, 422), r.text
    assert "cannot be null" in r.text and "leave a field out" in r.text
    assert len(mem.history(seeded["fact"])) == history
    sarah = http.post("/api/v1/entities/", json={"name": "Sarah", "summary": "Design lead"})
    r = http.patch(f"/api/v1/entities/{sarah.json()['id']}", json={"summary": None})
    assert r.status_code in (400, 422) and "summary cannot be null" in r.text


def test_a_patch_may_set_the_value_to_null(
    http: httpx.Client, mem: Memory, seeded: dict[str, str]
) -> None:
    mem.update(seeded["fact"], value={"size": "small"})
    r = http.patch(f"/api/v1/facts/{seeded['fact']}", json={"value": None})
    assert r.status_code == 200, r.text
    assert mem.get(seeded["fact"]).value is None
