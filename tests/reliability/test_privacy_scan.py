"""The privacy byte scan: after "forget a person" (and after purging one memory), no byte
of the forgotten text is left in the database files.

Two users in one store: alice gets distinctive marker words in turns, facts (content,
key and value, edited so old versions exist), episodes, a thread, channel identifiers and
an entity only she mentions; bob and alice-in-another-namespace get their own. After
``forget_user("alice")`` and close, every file of the database (``.db``, ``-wal``,
``-shm``, anything beside it) is read as bytes: none of alice's markers occur (as UTF-8,
lower-cased, or as the diacritic-free token the full-text index stores), her vectors'
bytes are gone, and the full-text vocabulary holds none of her words; bob's markers and
the other namespace's are still there (the scan can see text) and bob stays searchable.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memloci import AsyncMemory, Memory
from memloci.providers.fake import FakeEmbedder
from memloci.storage.sqlite.base import sqlite3

pytestmark = pytest.mark.reliability

ALICE = [
    "zorblattine",  # turns
    "quibblefritz",  # fact content
    "snackqx",  # fact key (snackqx_pref)
    "marzipanvolt",  # fact value
    "oldversionix",  # an edited-away first version
    "episodrax",  # an episode
    "threadmurk",  # thread messages
    "tgalice9931",  # a channel identifier
    "vexmoorgrad",  # an entity only she mentions
    "Žluťoučkoň",  # non-ASCII, folded to "zlutouckon" in the index
]
BOB = ["plumtoastic", "bobthreadwyrm"]
OTHER_NS = "othermarkerq"  # alice in another namespace: must survive
KINDS = {"users", "memories", "versions", "vectors", "edges", "entities", "threads"}


def folded(marker: str) -> str:
    return marker.lower().translate(str.maketrans("žťčň", "ztcn"))


def scan(folder: Path) -> bytes:
    """Every file of the folder (db, -wal, -shm, journals), concatenated."""
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


def fts_terms(db: Path) -> set[str]:
    conn = sqlite3.connect(str(db))
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, nodes_fts, row)")
        return {r[0] for r in conn.execute("SELECT term FROM temp.vocab")}
    finally:
        conn.close()


async def fill(mem: AsyncMemory) -> list[str]:
    svc = mem.service
    # a scrub of the empty store first (each scrub vacuums); the scan below proves that
    # secure delete, the vacuum, the full-text merge and the WAL truncation do the work
    assert not any((await mem.forget_user("nobody")).model_dump(include=KINDS).values())
    for i in range(150):  # enough to spread over many pages and FTS segments
        await mem.add(f"alice says zorblattine {i} and Žluťoučkoň", user="alice", session="sa")
        await mem.add(f"bob says plumtoastic {i}", user="bob", session="sb")
    fact = await mem.remember(
        "alice oldversionix snack", user="alice", key="snackqx_pref", value="marzipanvolt"
    )
    await mem.update(fact.memory.id, "alice quibblefritz snack")
    await mem.record_episode("alice episodrax trip to the coast", user="alice")
    await mem.remember("bob prefers plumtoastic tea", user="bob")
    await mem.remember("alice othermarkerq", user="alice", namespace="other")
    await svc.records.save_user(
        "alice", display_name="Alice", identifiers={"telegram": "tgalice9931"}
    )
    await svc.records.save_user("bob", identifiers={"telegram": "tgbob"})
    await svc.records.append_messages(
        "t-alice", [{"role": "user", "content": "threadmurk is my secret"}], user="alice"
    )
    await svc.records.append_messages(
        "t-bob", [{"role": "user", "content": "bobthreadwyrm here"}], user="bob"
    )
    own = await svc.records.save_entity("Vexmoorgrad")
    shared = await svc.records.save_entity("Lisbon")
    await svc.records.link_entities(fact.memory.id, [own.id, shared.id])
    bob_fact = (await mem.list(owner="bob", type="semantic"))[0]
    await svc.records.link_entities(bob_fact.id, [shared.id])
    await mem.flush(30)
    alice_ids = [n.id for n in await mem.list(owner="alice", include_forgotten=True, limit=1000)]
    vectors = svc.store.search.vectors("default", alice_ids)
    assert len(vectors) == len(alice_ids) > 150
    return [blob[:48].hex() for blob in vectors.values()]


def test_forget_user_leaves_no_byte_of_their_text(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    db = folder / "m.db"

    async def run() -> tuple[list[str], dict[str, object]]:
        mem = AsyncMemory(str(db), embedder=FakeEmbedder())
        try:
            vectors = await fill(mem)
            before = scan(folder)
            assert all(m.encode() in before or folded(m).encode() in before for m in ALICE)
            report = await mem.forget_user("alice")
            return vectors, report.model_dump()
        finally:
            await mem.aclose()

    vectors, report = asyncio.run(run())
    assert report["memories"] == 152 and report["users"] == 1 and report["threads"] == 1
    assert report["identifiers"] == 1 and report["entities"] == 1 and report["scrubbed"]
    data = scan(folder)
    for marker in ALICE:
        for form in {marker, marker.lower(), folded(marker), marker[:7].lower()}:
            assert form.encode() not in data, f"{form!r} is still in the files"
    assert not any(bytes.fromhex(v) in data for v in vectors), "a vector is still in the files"
    for marker in [*BOB, OTHER_NS, "tgbob", "lisbon"]:
        assert marker.encode() in data or marker.title().encode() in data  # the scan sees text
    terms = fts_terms(db)
    assert not any(t.startswith(folded(m)[:7]) for m in ALICE for t in terms)
    assert any(t.startswith("plumtoast") for t in terms)
    with Memory(str(db), embedder=FakeEmbedder()) as mem:
        assert mem.count(owner="alice", include_forgotten=True) == 0
        assert mem.count(owner="bob") == 151
        assert mem.search("plumtoastic", user="bob")
        assert mem.count(owner="alice", namespace="other") == 1


def test_purge_leaves_no_byte_of_the_memory_after_close(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    with Memory(str(folder / "m.db"), embedder=FakeEmbedder()) as mem:
        mem.forget_user("nobody")  # a scrub of the empty store; the purge's comes at close
        for i in range(200):
            mem.add(f"filler turn number {i} about the weather", user="bob")
        res = mem.remember("the vault code is purgatorixcode 5521", user="bob")
        mem.update(res.memory.id, "the vault code is purgatorixcode 5522 now")
        mem.flush(30)
        assert b"purgatorixcode" in scan(folder)
        mem.purge(res.memory.id)
    data = scan(folder)
    assert b"purgatorixcode" not in data and b"purgatorix" not in data
    assert b"filler turn number 199" in data
    assert not any(t.startswith("purgatorix") for t in fts_terms(folder / "m.db"))
