"""REST and MCP calls naming a memory user that was merged into another act as the user
it joined: writes land there, reads see that user's memories."""

from __future__ import annotations

import asyncio

import httpx
from mcp import Client
from mcp_helpers import stored, text

from memloci import Memory
from memloci.interfaces.mcp import build_server


def test_rest_calls_as_a_merged_user_act_as_the_user_it_joined(
    http: httpx.Client, mem: Memory
) -> None:
    for uid in ("sam", "sam3"):
        assert http.post("/api/v1/memory-users/", json={"id": uid}).status_code in (200, 201)
    mem.remember("Sam's greyhound is called Pixel", user="sam")
    assert http.get("/api/v1/search", params={"q": "greyhound", "user": "sam3"}).status_code == 200
    merge = http.post("/api/v1/memory-users/sam3/merge", json={"into": "sam"})
    assert merge.status_code == 200, merge.text
    fact = http.post("/api/v1/facts/", json={"content": "Sam moved to Porto", "user": "sam3"})
    assert fact.status_code == 201, fact.text
    assert fact.json()["memory"]["user"] == "sam"
    turns = http.post(
        "/api/v1/turns/",
        json={"messages": [{"role": "user", "content": "I booked a flat"}], "user": "sam3"},
    )
    assert turns.status_code == 201 and turns.json()[0]["user"] == "sam"
    hits = http.get("/api/v1/search", params={"q": "greyhound", "user": "sam3"}).json()["hits"]
    assert [h["memory"]["content"] for h in hits][:1] == ["Sam's greyhound is called Pixel"]
    context = http.post("/api/v1/context", json={"prompt": "my dog", "user": "sam3"}).json()
    assert "Pixel" in context["context"]
    as_sam = http.get("/api/v1/search", params={"q": "Porto", "user": "sam"}).json()["hits"]
    assert any(h["memory"]["content"] == "Sam moved to Porto" for h in as_sam)


def test_mcp_bound_to_a_merged_user_acts_as_the_user_it_joined(mem: Memory) -> None:
    service = mem.service

    async def scenario() -> tuple[str, str]:
        await service.records.save_user("sam")
        await service.records.save_user("sam3")
        await service.memories.remember("Sam's greyhound is called Pixel", user="sam")
        async with Client(build_server(service, user="sam3")) as client:
            await client.call_tool("recall", {"query": "greyhound"})  # looked up before
            await service.records.merge_users("sam3", "sam")
            recalled = await client.call_tool("recall", {"query": "greyhound"})
            saved = await client.call_tool("remember", {"content": "Sam plays the cello"})
            return text(recalled), text(saved)

    recalled, saved = asyncio.run(scenario())
    assert "Pixel" in recalled
    assert saved.startswith("Remembered"), saved
    assert {n.user for n in stored(service)} == {"sam"}
