"""The SDK surface: ``Memory`` (sync) and ``AsyncMemory``, options, lifecycle, and a few
end-to-end checks with the real bundled embedder (marked ``slow``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memloci import AsyncMemory, Memory, MemoryNode, SearchHit, Settings, WriteResult
from memloci.errors import StorageError
from memloci.providers.bge import BgeSmallEmbedder
from memloci.providers.fake import FakeEmbedder


def test_memory_returns_typed_results(mem: Memory) -> None:
    node = mem.add("a typed turn")
    assert isinstance(node, MemoryNode)
    many = mem.add([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}])
    assert isinstance(many, list) and all(isinstance(n, MemoryNode) for n in many)
    res = mem.remember("A typed fact about owls")
    assert isinstance(res, WriteResult)
    hits = mem.search("owls")
    assert hits and all(isinstance(h, SearchHit) for h in hits)
    assert isinstance(mem.context(), str)


def test_keyword_options_become_settings(make_memory) -> None:
    mem = make_memory(max_episodes=7, namespace="tenant-1", context_budget=400)
    assert isinstance(mem.settings, Settings)
    assert (mem.settings.max_episodes, mem.settings.namespace) == (7, "tenant-1")
    node = mem.add("written to the default namespace of this memory")
    assert node.namespace == "tenant-1"
    assert [n.id for n in mem.list()] == [node.id]
    assert mem.list(namespace="default") == []


def test_settings_object_and_overrides(make_memory) -> None:
    base = Settings(namespace="from-settings", max_memories=3)
    mem = make_memory(settings=base, max_memories=5)
    assert mem.settings.namespace == "from-settings" and mem.settings.max_memories == 5


def test_embedder_by_name(make_memory, tmp_path: Path) -> None:
    fake = make_memory(str(tmp_path / "fake.db"), embedder="fake")
    assert fake.stats().embedding_model == "fake:64"
    none = make_memory(str(tmp_path / "none.db"), embedder="none")
    assert none.stats().embedding_model is None
    none.add("full text only store")
    assert none.search("full text")[0].strategies == {"fulltext": 1}


def test_missing_folder_is_a_clear_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as err:
        Memory(str(tmp_path / "missing" / "m.db"), embedder=None)
    assert "does not exist" in err.value.message and err.value.hint


def test_context_manager_and_double_close(db_path: str) -> None:
    with Memory(db_path, embedder=FakeEmbedder()) as mem:
        fact = mem.remember("Persisted through a context manager")
    mem.close()  # closing twice is harmless
    with Memory(db_path, embedder=FakeEmbedder()) as again:
        assert again.get(fact.memory.id).content == "Persisted through a context manager"
        assert again.stats().pending_embeddings == 0  # close() finished the embeddings


def test_data_survives_reopen(make_memory, db_path: str) -> None:
    first = make_memory()
    fact = first.remember("The user speaks Portuguese", key="language")
    first.update(fact.memory.id, "The user speaks Portuguese and Spanish")
    first.close()
    second = make_memory()
    assert second.lookup("language").content == "The user speaks Portuguese and Spanish"
    assert len(second.history(fact.memory.id)) == 2
    assert second.search("Spanish")[0].memory.id == fact.memory.id


def test_async_memory(tmp_path: Path) -> None:
    async def scenario(path: str) -> None:
        async with AsyncMemory(path, embedder=FakeEmbedder()) as am:
            turn = await am.add("async turn about kayaks", session="s")
            fact = await am.remember("The user owns two kayaks", key="kayaks")
            assert (await am.lookup("kayaks")).id == fact.memory.id
            assert await am.flush(5)
            hits = await am.search("kayaks")
            assert {h.memory.id for h in hits} == {turn.id, fact.memory.id}
            updated = await am.update(fact.memory.id, "The user owns three kayaks")
            assert updated.memory.version == 2
            assert "[id:" in await am.context()
            assert len(await am.list()) == 2
            await am.forget(turn.id)
            assert [n.id for n in await am.list()] == [fact.memory.id]

    asyncio.run(scenario(str(tmp_path / "a.db")))


def test_sync_methods_mirror_async_ones() -> None:
    public = {
        name
        for name in vars(AsyncMemory)
        if not name.startswith("_") and name not in {"aclose", "service", "settings"}
    }

    def kind(cls: type, name: str) -> str:
        attr = getattr(cls, name, None)
        return "property" if isinstance(attr, property) else "method" if callable(attr) else "?"

    differ = {name for name in public if kind(Memory, name) != kind(AsyncMemory, name)}
    assert differ == set()  # each async method or property has its sync twin
    assert Memory.search.__doc__ == AsyncMemory.search.__doc__


# ---------------------------------------------------------------------------- real embedder


@pytest.mark.slow
def test_semantic_search_with_the_bundled_model(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "real.db")) as mem:
        assert mem.stats().embedding_model == BgeSmallEmbedder.MODEL_ID  # the default
        pet = mem.add("I adopted a golden retriever named Biscuit", user="u1")
        for text in (
            "I work as a nurse at the city hospital",
            "My favourite food is sushi",
            "We moved to Lisbon last spring",
            "The meeting is on Tuesday at noon",
        ):
            mem.add(text, user="u1")
        assert mem.flush(60)
        hits = mem.search("which pet does the user own?", user="u1")
        assert hits[0].memory.id == pet.id
        assert "vector" in hits[0].strategies


@pytest.mark.slow
def test_near_duplicate_with_the_bundled_model(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "real.db")) as mem:
        first = mem.remember("The user loves hiking in the mountains")
        again = mem.remember("The user really loves hiking in the mountains")
        assert again.action == "confirmed" and again.memory.id == first.memory.id
        other = mem.remember("The user's car is a blue station wagon")
        assert other.action == "created"


def test_readme_promised_methods(tmp_path: Path) -> None:
    """What the README's SDK section promises exists on both classes: ``close()`` (also
    awaitable on AsyncMemory), ``explain(id)``, ``weak_facts()``, ``context_parts()``."""
    with Memory(str(tmp_path / "s.db"), embedder=FakeEmbedder()) as m:
        fact = m.remember("The user prefers Friday due dates", user="u1").memory
        m.learn_procedure("Always confirm the time zone first")
        why = m.explain(fact.id)
        assert why.memory.id == fact.id and [v.version for v in why.versions] == [1]
        assert m.weak_facts(user="u1") == []
        assert m.weak_facts(user="u1", threshold=1.0)[0][0].id == fact.id
        cacheable, dynamic = m.context_parts("due dates", user="u1", budget=1000)
        assert "Friday due dates" in cacheable and "time zone" in cacheable
        assert isinstance(dynamic, str)
        assert cacheable in m.context("due dates", user="u1", budget=1000)

    async def scenario(path: str) -> None:
        am = AsyncMemory(path, embedder=FakeEmbedder())
        fact = (await am.remember("The user owns two kayaks", user="u1")).memory
        assert (await am.explain(fact.id)).memory.id == fact.id
        assert (await am.weak_facts(threshold=1.0))[0][0].id == fact.id
        cacheable, _ = await am.context_parts(user="u1")
        assert "two kayaks" in cacheable
        await am.close()  # the README's close(), as a coroutine
        await am.close()  # twice is fine

    asyncio.run(scenario(str(tmp_path / "a.db")))


def test_consolidation_and_maintenance_run_from_the_sync_sdk(tmp_path: Path) -> None:
    """The README's ``end_session`` / ``consolidate`` / ``maintain`` on ``Memory`` do the
    work (``m.service``'s are coroutines: called from sync code they did nothing)."""
    with Memory(str(tmp_path / "c.db"), embedder=FakeEmbedder()) as m:
        m.add("I moved to Porto last month", user="u1", session="s1", speaker="user")
        m.flush()
        report = m.end_session("s1")
        assert report.sessions == ["s1"]
        assert [f.content for f in m.list(user="u1", type="semantic")] == [
            "User moved to Porto last month"
        ]
        m.add("My sister Ana is a nurse", user="u1", session="s2", speaker="user")
        m.flush()
        assert m.consolidate(user="u1").sessions == ["s2"]
        assert m.maintain().ran
