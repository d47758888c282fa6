"""Users sharing a session id: their turns are chained apart, searches never match one
user's words through another's row, and a store written before the fix is unlinked by
its migration (SQLite v6, PostgreSQL v8) — through the SDK, on both backends."""

from __future__ import annotations

from collections.abc import Callable

from memloci import Memory
from memloci.storage.base import Store, migration_scripts
from memloci.storage.sqlite import SQLiteStore
from pgtest import both_backends

MakeMemory = Callable[..., Memory]
OWNER_CHAINS = {"sqlite": 6, "postgres": 8}  # the migrations that unlink such chains


def _backend(store: Store) -> str:
    return "sqlite" if isinstance(store, SQLiteStore) else "postgres"


def _rechain(mem: Memory, first: str, second: str) -> None:
    """What the store did before the fix: the second turn chained to the first, whoever
    said it (context both ways, a temporal edge), and the schema version before."""
    store = mem.service.store
    version = OWNER_CHAINS[_backend(store)] - 1
    said = {n.id: n for n in mem.list(type="episodic", limit=10)}
    ph = "?" if _backend(store) == "sqlite" else "%s"
    with store.db.tx() as c:  # type: ignore[attr-defined]
        c.execute(
            f"UPDATE nodes SET context = {ph} WHERE id = {ph}",
            (f"user: {said[first].content}", second),
        )
        c.execute(
            f"UPDATE nodes SET next_context = {ph} WHERE id = {ph}",
            (f"user: {said[second].content}", first),
        )
        c.execute(
            "INSERT INTO edges (id, namespace, source_id, target_id, relation, valid_from,"
            f" created_at) VALUES ('oldchain0', 'default', {ph}, {ph}, 'temporal', 0, 0)",
            (first, second),
        )
        c.execute(f"UPDATE meta SET value = {ph} WHERE key = 'schema_version'", (str(version),))


@both_backends
def test_a_shared_session_id_chains_each_users_turns_apart(make_memory: MakeMemory) -> None:
    mem = make_memory()
    secret = mem.add("my pin code is pineapple", user="ana", session="s1", speaker="user")
    hello = mem.add("hello there", user="bo", session="s1", speaker="user")
    again = mem.add("and my dog is Rex", user="ana", session="s1", speaker="user")
    assert mem.flush(20)
    assert mem.search("pineapple", user="bo", recipe="fulltext") == []
    # hybrid may return bo's one memory by meaning (evidence 0), never by ana's words
    assert all("full text" not in h.why for h in mem.search("pineapple", user="bo"))
    store = mem.service.store
    assert store.memories.edges("default", hello.id) == []
    assert [(e.source_id, e.target_id) for e in store.memories.edges("default", again.id)] == [
        (secret.id, again.id)
    ]


@both_backends
def test_the_migration_unlinks_turns_chained_across_users(
    db_path: str, make_memory: MakeMemory
) -> None:
    mem = make_memory()
    secret = mem.add("my pin code is pineapple", user="ana", session="s1", speaker="user")
    hello = mem.add("hello there", user="bo", session="s1", speaker="user")
    mine = mem.add("and my dog is Rex", user="ana", session="s1", speaker="user")
    assert mem.flush(20)
    _rechain(mem, secret.id, hello.id)
    hits = mem.search("pineapple", user="bo", recipe="fulltext")
    assert [h.memory.id for h in hits] == [hello.id]  # the leak the migration removes
    mem.close()
    again = make_memory(db_path)
    store = again.service.store
    assert store.schema_version() == migration_scripts(_backend(store))[-1][0]
    assert again.search("pineapple", user="bo", recipe="fulltext") == []
    assert store.memories.edges("default", hello.id) == []
    # ana's own chain is kept
    assert [(e.source_id, e.target_id) for e in store.memories.edges("default", mine.id)] == [
        (secret.id, mine.id)
    ]
    found = {h.memory.id for h in again.search("pineapple", user="ana", recipe="fulltext")}
    assert found == {secret.id, mine.id}
