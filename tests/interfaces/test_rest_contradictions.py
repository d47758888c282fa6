"""A fact that contradicts an older one says so over REST (201, ``superseded``) and in
the agent tools' reply."""

from __future__ import annotations

import httpx

from memloci import Memory


def test_rest_create_says_it_supersedes(http: httpx.Client) -> None:
    first = http.post(
        "/api/memory/", json={"content": "The build server is fast", "category": "context"}
    )
    assert first.status_code == 201 and first.json()["action"] == "created"
    second = http.post(
        "/api/memory/", json={"content": "The build server is slow", "category": "context"}
    )
    assert second.status_code == 201
    body = second.json()
    assert body["action"] == "superseded"
    assert f"supersedes [{first.json()['id']}]" in body["message"]
    listing = http.get("/api/memory/").json()
    assert [m["content"] for m in listing["memories"]] == ["The build server is slow"]
    fact = http.post("/api/v1/facts/", json={"content": "The build server is fast"}).json()
    assert fact["action"] == "superseded" and fact["similar"][0]["id"] == body["id"]


def test_the_tool_reply_names_the_replaced_fact(mem: Memory) -> None:
    mem.tools.call(
        "add_to_memory", {"content": "The office is located in Berlin", "category": "context"}
    )
    reply = mem.tools.call(
        "add_to_memory", {"content": "The office is located in Munich", "category": "context"}
    )
    assert "The office is located in Munich" in reply
    assert "replaces" in reply and "The office is located in Berlin" in reply
    assert "no longer holds" in reply
