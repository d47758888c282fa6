"""A memory user merged into another is that user from then on: every call naming the
old id (SDK sync and async, service) writes and reads as the user it was merged into,
on both backends, and across processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator

import pytest

from memloci import AsyncMemory, Memory
from memloci.config import Settings
from memloci.errors import ConflictError
from memloci.models import Thread, utcnow
from memloci.providers.fake import FakeEmbedder
from memloci.service import MemoryService
from memloci.service.compose import build_service
from memloci.storage.base import NodeFilter
from pgtest import both_backends

pytestmark = both_backends


def owners(service: MemoryService) -> set[str | None]:
    """Who every stored memory belongs to, read as stored (no id followed)."""
    every = NodeFilter(namespaces=("default",), include_invalid=True)
    return {n.user for n in asyncio.run(service.memories.list_nodes(every, limit=200))}


def merged(mem: Memory) -> None:
    """sam and sam3, one fact each; sam3 merged into sam."""
    asyncio.run(mem.service.records.save_user("sam"))
    asyncio.run(mem.service.records.save_user("sam3"))
    mem.remember("Sam's greyhound is called Pixel", user="sam")
    mem.remember("Sam plays the cello on Sundays", user="sam3")
    asyncio.run(mem.service.records.merge_users("sam3", "sam"))


def test_sdk_writes_as_a_merged_user_land_under_the_user_it_joined(mem: Memory) -> None:
    merged(mem)
    stored = mem.remember("Sam moved to Porto in May", user="sam3").memory
    assert stored.user == "sam"
    [turn] = [mem.add("I booked the Porto flat", user="sam3", session="s1")]
    assert turn.user == "sam"
    episode = mem.record_episode("Sam asked about trains", user="sam3").memory
    assert episode.user == "sam"
    procedure = mem.learn_procedure("Answer Sam in Portuguese", user="sam3").memory
    assert procedure.user == "sam"
    as_sam = [h.memory.content for h in mem.search("Porto", user="sam")]
    assert "Sam moved to Porto in May" in as_sam
    assert mem.count(user="sam3", include_forgotten=True) == mem.count(
        user="sam", include_forgotten=True
    )
    assert owners(mem.service) == {"sam"}


def test_sdk_reads_as_a_merged_user_see_the_user_it_joined(mem: Memory) -> None:
    merged(mem)
    found = [h.memory.content for h in mem.search("greyhound", user="sam3")]
    assert "Sam's greyhound is called Pixel" in found
    assert "Pixel" in mem.context("What is my dog called?", user="sam3")
    listed = {n.content for n in mem.list(user="sam3")}
    assert (
        "Sam's greyhound is called Pixel" in listed and "Sam plays the cello on Sundays" in listed
    )
    tools = mem.tools(user="sam3")
    assert "Pixel" in tools.call("recall", {"query": "greyhound"})
    answer = tools.call("remember", {"content": "Sam's cello is a Stradivarius copy"})
    assert answer.startswith("Remembered"), answer
    assert any("Stradivarius" in h.memory.content for h in mem.search("cello", user="sam"))


def test_async_sdk_follows_the_merge(db_path: str) -> None:
    async def scenario() -> None:
        async with AsyncMemory(db_path, embedder=FakeEmbedder()) as mem:
            await mem.service.records.save_user("sam")
            await mem.service.records.save_user("sam3")
            await mem.remember("Sam's greyhound is called Pixel", user="sam")
            await mem.search("greyhound", user="sam3")  # the old id is looked up (cached)
            await mem.service.records.merge_users("sam3", "sam")
            stored = (await mem.remember("Sam moved to Porto in May", user="sam3")).memory
            assert stored.user == "sam"
            turn = await mem.add("I booked the Porto flat", user="sam3", session="s1")
            assert not isinstance(turn, list) and turn.user == "sam"
            hits = await mem.search("greyhound", user="sam3")
            assert [h.memory.content for h in hits][:1] == ["Sam's greyhound is called Pixel"]
            porto = {h.memory.content for h in await mem.search("Porto", user="sam")}
            assert "Sam moved to Porto in May" in porto

    asyncio.run(scenario())


@pytest.fixture
def service(db_path: str) -> Iterator[MemoryService]:
    svc = build_service(Settings(path=db_path), embedder=FakeEmbedder())
    yield svc
    svc.close()


def test_service_follows_chains_threads_and_lookups(service: MemoryService) -> None:
    async def scenario() -> None:
        for uid in ("a", "b", "c"):
            await service.records.save_user(uid)
        await service.memories.remember("A likes figs", user="a", key="fruit")
        await service.records.merge_users("a", "b")
        await service.records.merge_users("b", "c")  # a → b → c
        assert (await service.memories.remember("A likes tea", user="a")).memory.user == "c"
        assert (await service.memories.lookup("fruit", user="a")) is not None
        assert service.filter(user="a", owner_user="b").user == "c"
        assert service.filter(user="a", owner_user="b").owner_user == "c"
        thread = await service.records.append_messages(
            "t1", [{"role": "user", "content": "hi"}], user="a"
        )
        assert thread.user == "c"
        again = await service.records.append_messages(  # the owner is the same person: no conflict
            "t1", [{"role": "user", "content": "again"}], user="b"
        )
        assert again.message_count == 2
        now = utcnow()
        saved = await service.records.save_thread(
            Thread(id="t2", namespace="default", user="a", created_at=now, updated_at=now)
        )
        assert saved.user == "c"
        assert {t.id for t in await service.records.list_threads(user="a")} == {"t1", "t2"}
        assert {t.id for t in (await service.paging.page_threads(user="a")).items} == {"t1", "t2"}
        contact = await service.records.touch_user("a", new_conversation=True)
        assert contact.id == "c"  # threads t1 and t2 were conversations: this is the 3rd
        assert contact.conversation_count == 3
        with pytest.raises(ConflictError):
            await service.privacy.forget_user("a")  # kept: forget the user it joined instead

    asyncio.run(scenario())


def test_a_stale_cache_never_lets_a_write_land_under_the_merged_id(
    service: MemoryService, db_path: str
) -> None:
    """Another process merges after this one looked the old id up: the next write here
    still lands under the user it joined."""

    async def before() -> None:
        await service.records.save_user("sam")
        await service.records.save_user("sam3")
        await service.memories.remember("Sam's greyhound is called Pixel", user="sam3")
        assert service.filter(user="sam3").user == "sam3"  # looked up, cached

    asyncio.run(before())
    code = (
        "import asyncio, sys\n"
        "from memloci.service.compose import build_service\n"
        "from memloci.config import Settings\n"
        "svc = build_service(Settings(path=sys.argv[1]), embedder=None)\n"
        "asyncio.run(svc.records.merge_users('sam3', 'sam'))\n"
        "svc.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, db_path], check=True, timeout=120)

    async def after() -> None:
        stored = (await service.memories.remember("Sam moved to Porto in May", user="sam3")).memory
        assert stored.user == "sam"
        [turn] = await service.memories.add("I booked the Porto flat", user="sam3", session="s9")
        assert turn.user == "sam"

    asyncio.run(after())
    assert owners(service) == {"sam"}
