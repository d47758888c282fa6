"""The LlamaIndex integration through the real ``llama_index.core`` classes (offline:
a whitespace tokenizer instead of tiktoken's downloaded one): the memory block inside
LlamaIndex's ``Memory`` stores what leaves the short-term memory and brings back
memloci's context; the tools are LlamaIndex ``FunctionTool`` objects."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import Memory as ChatMemory
from llama_index.core.tools import FunctionTool

from memloci import AsyncMemory, ValidationError
from memloci.integrations.llamaindex import MemlociMemoryBlock, memory_tools
from memloci.providers.fake import FakeEmbedder
from memloci.tools import TOOLS


def words(text: str) -> list[str]:
    return text.split()


def test_the_block_stores_flushed_turns_and_brings_back_context(make_memory: Any) -> None:
    memory = make_memory()
    memory.remember("Sam's greyhound is called Pixel", user="sam")
    block = MemlociMemoryBlock(memory=memory, user="sam", budget=400)

    async def scenario() -> list[ChatMessage]:
        chat = ChatMemory.from_defaults(
            session_id="chat-1",
            memory_blocks=[block],
            tokenizer_fn=words,
            token_limit=40,
            token_flush_size=10,
        )
        turns = [
            ("user", "I moved to Lisbon last year and I love the tiles there"),
            ("assistant", "Lisbon is lovely; the azulejos are famous"),
            ("user", "My sister Ana visits me every spring from Porto"),
            ("assistant", "Spring in Lisbon with Ana sounds wonderful"),
            ("user", "What is my dog called again?"),
        ]
        try:
            for role, text in turns:
                await chat.aput(ChatMessage(role=MessageRole(role), content=text))
            return await chat.aget()
        finally:  # LlamaIndex's own chat store (SQLite in memory) closes with its loop
            engine = chat.sql_store._async_engine  # type: ignore[attr-defined]
            if engine is not None:
                await engine.dispose()

    messages = asyncio.run(scenario())
    system = messages[0]
    assert system.role == MessageRole.SYSTEM
    assert "<memloci>" in str(system.content) and "Pixel" in str(system.content)
    stored = memory.list(type="episodic", user="sam", limit=50)
    texts = {n.content for n in stored}
    assert "I moved to Lisbon last year and I love the tiles there" in texts  # flushed out
    assert {n.session for n in stored} == {"chat-1"}  # the chat's session id
    assert {n.speaker or n.role for n in stored} <= {"user", "assistant", "sam"}
    assert len(stored) < 5  # the recent turns stay in LlamaIndex's short-term memory


def test_the_block_reads_only_its_users_memories(make_memory: Any) -> None:
    memory = make_memory()
    memory.remember("Sam's greyhound is called Pixel", user="sam")
    memory.remember("Ana's cat is called Miso", user="ana")
    block = MemlociMemoryBlock(memory=memory, user="ana")
    prompt = [ChatMessage(role=MessageRole.USER, content="What are my pets called?")]
    text = asyncio.run(block.aget(prompt))
    assert "Miso" in text and "Pixel" not in text


def test_an_async_memory_works_and_bad_ids_are_refused(db_path: str) -> None:
    async def scenario() -> str:
        async with AsyncMemory(db_path, embedder=FakeEmbedder()) as memory:
            await memory.remember("Sam's greyhound is called Pixel", user="sam")
            block = MemlociMemoryBlock(memory=memory, user="sam", session="s1")
            await block.aput(
                [
                    ChatMessage(role=MessageRole.USER, content="I play the cello on Sundays"),
                    ChatMessage(role=MessageRole.SYSTEM, content="You are helpful"),  # not kept
                    ChatMessage(role=MessageRole.ASSISTANT, content=""),  # no text: not kept
                ]
            )
            nodes = await memory.list(type="episodic", user="sam")
            assert [n.content for n in nodes] == ["I play the cello on Sundays"]
            assert nodes[0].session == "s1"
            return await block.aget([])

    assert "Pixel" in asyncio.run(scenario())  # no prompt: the user's facts
    with pytest.raises(ValidationError, match="a Memory or an AsyncMemory"):
        MemlociMemoryBlock(memory=object(), user="sam")


def test_bad_ids_are_refused_when_the_block_is_made(make_memory: Any) -> None:
    memory = make_memory()
    for bad in ({"user": ""}, {"session": " "}, {"agent": "x" * 201}, {"namespace": "Not Valid"}):
        with pytest.raises(ValidationError):
            MemlociMemoryBlock(memory=memory, **bad)


def test_the_tools_are_function_tools_that_remember_and_recall(make_memory: Any) -> None:
    memory = make_memory()
    tools = {t.metadata.name: t for t in memory_tools(memory, user="sam")}
    assert sorted(tools) == sorted(n for n, t in TOOLS.items() if t.alias_of is None)
    assert all(isinstance(t, FunctionTool) for t in tools.values())
    remember = tools["remember"]
    assert remember.metadata.fn_schema is TOOLS["remember"].args
    assert remember.metadata.description == TOOLS["remember"].description
    stored = remember.call(content="Sam's greyhound is called Pixel")
    assert "Remembered" in str(stored.content) and not stored.is_error
    found = asyncio.run(tools["recall"].acall(query="greyhound"))
    assert "Pixel" in str(found.content)
    bad = remember.call(content="")  # problems come back as text, never raised
    assert str(bad.content).startswith("Error:")
    (node,) = memory.list(type="semantic")
    assert node.user == "sam"
