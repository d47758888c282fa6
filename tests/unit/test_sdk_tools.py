"""``memory.tools`` on the SDK: usable directly, callable with bindings, never raising."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memloci import AsyncMemory, Memory, ValidationError
from memloci.providers.fake import FakeEmbedder
from memloci.tools import TOOLS, Tools


def test_sync_tools_direct_and_bound(make_memory: Any) -> None:
    m: Memory = make_memory()
    assert m.tools.names == list(TOOLS)
    shared = m.tools.call("remember", {"content": "The office closes at six"})
    assert shared.startswith("Remembered")
    sam = m.tools(user="sam", session="s1")
    assert sam.call("remember", '{"content": "Sam keeps bees on the roof"}').startswith(
        "Remembered"
    )
    alex = m.tools(user="alex")
    assert "bees" in sam.call("recall", {"query": "bees"})
    assert "roof" not in alex.call("recall", {"query": "bees"})  # bound: alex cannot see it
    assert "office" in alex.call("recall", {"query": "office"})
    assert m.list(owner="sam")[0].session == "s1"


def test_sync_tools_never_raise(make_memory: Any) -> None:
    m: Memory = make_memory()
    assert m.tools.call("nope").startswith("Error: unknown tool 'nope'")
    assert m.tools(user="u").call("recall", "{not json").startswith("Error: recall:")
    assert m.tools.call("forget", {"memory_id": "a1B2c3D4"}).startswith("Error:")


def test_bindings_are_validated_when_bound(make_memory: Any) -> None:
    m: Memory = make_memory(namespace="tenant-a")
    with pytest.raises(ValidationError):
        m.tools(user="bad\nid")
    with pytest.raises(ValidationError):
        m.tools(namespace="Not A Namespace")
    m.tools(namespace="tenant-b", user="u").call("remember", {"content": "In tenant b only"})
    assert m.list(namespace="tenant-b")[0].content == "In tenant b only"
    assert m.list() == []


def test_async_tools(db_path: str) -> None:
    async def go() -> None:
        async with AsyncMemory(db_path, embedder=FakeEmbedder()) as m:
            assert isinstance(m.tools, Tools)
            text = await m.tools(user="sam").call("remember", {"content": "Sam likes green tea"})
            assert text.startswith("Remembered")
            assert "green tea" in await m.tools(user="sam").call("recall", {"query": "tea"})
            assert (await m.tools.call("memory_stats")).strip()
            ctx = await m.identify_user({"channel": "telegram", "user_id": 9})
            conv = m.conversation(user=ctx.user.id, agent="bot")
            await conv.start()
            assert await conv.record("user", "hello")

    asyncio.run(go())
