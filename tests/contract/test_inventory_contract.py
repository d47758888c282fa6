"""The Store contract for whole-store reads (``memloci migrate``): namespaces in use,
consolidation sessions and knowledge-chunk vectors, through the protocol only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from memloci.models import (
    Entity,
    KnowledgeChunk,
    KnowledgeSource,
    MemoryNode,
    MemoryUser,
    NodeType,
    Scope,
    Thread,
    short_id,
)
from memloci.storage.base import SessionState, Store

from .conftest import EMBED_DIM, EMBED_MODEL

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def _node(ns: str) -> MemoryNode:
    return MemoryNode(
        id=short_id(), namespace=ns, type=NodeType.EPISODIC, content="a turn",
        scope=Scope.SESSION, session="s", event_time=T0, created_at=T0, updated_at=T0,
        valid_from=T0,
    )  # fmt: skip


def test_record_namespaces_lists_every_namespace_in_use(store: Store) -> None:
    assert store.record_namespaces() == []
    store.memories.insert_node(_node("mem"))
    store.people.upsert_user(MemoryUser(id="u1", namespace="people", created_at=T0))
    store.people.upsert_thread(Thread(id="t1", namespace="chats", created_at=T0, updated_at=T0))
    store.entities.insert_entity(Entity(id="e1", namespace="graph", canonical_name="Ada",
                               first_seen=T0, last_seen=T0))  # fmt: skip
    store.jobs.register_session("sessions", "s1", user=None, agent=None, now=T0)
    src = KnowledgeSource(id="k1", namespace="docs", path="/d/k1.md", content_hash="h",
                          added_at=T0, updated_at=T0)  # fmt: skip
    store.knowledge.replace_knowledge(src, [], None)
    assert store.record_namespaces() == ["chats", "docs", "graph", "mem", "people", "sessions"]
    assert set(store.namespaces()) <= set(store.record_namespaces())


def test_sessions_lists_pending_and_consolidated_in_order(store: Store) -> None:
    store.jobs.register_session("a", "s2", user="u", agent=None, now=T0 + timedelta(hours=1))
    store.jobs.register_session("a", "s1", user="u", agent="bot", now=T0)
    store.jobs.finish_session("a", "s1", user="u", agent="bot", now=T0 + timedelta(hours=2))
    store.jobs.register_session("b", "s9", user=None, agent=None, now=T0)
    assert store.sessions("a") == [
        SessionState("a", "s1", "u", "bot", T0, T0 + timedelta(hours=2)),
        SessionState("a", "s2", "u", None, T0 + timedelta(hours=1), None),
    ]
    assert [s.session for s in store.sessions("b")] == ["s9"]
    assert store.sessions("none") == []


def test_knowledge_vectors_round_trip_bytes(store: Store) -> None:
    def put(ns: str, sid: str, with_vectors: bool) -> np.ndarray:
        src = KnowledgeSource(
            id=sid, namespace=ns, path=f"/d/{sid}.md", content_hash="h", chunk_count=2,
            embedding_model=EMBED_MODEL if with_vectors else None, added_at=T0, updated_at=T0,
        )  # fmt: skip
        chunks = [
            KnowledgeChunk(
                id=f"{sid}-{i}",
                namespace=ns,
                source_id=sid,
                ordinal=i,
                text=f"chunk {i}",
                start_char=0,
                end_char=7,
                embedding_model=src.embedding_model,
            )
            for i in range(2)
        ]
        vecs = np.random.default_rng(len(sid)).random((2, EMBED_DIM), dtype=np.float32)
        store.knowledge.replace_knowledge(src, chunks, vecs if with_vectors else None)
        return vecs

    vecs = put("a", "src", True)
    put("b", "src", False)
    got = store.knowledge_vectors("a", "src")
    assert list(got) == ["src-0", "src-1"]
    for i, blob in enumerate(got.values()):
        assert np.array_equal(np.frombuffer(blob, np.float32), vecs[i])
    assert store.knowledge_vectors("b", "src") == {}
    assert store.knowledge_vectors("c", "src") == {}


def test_gauges_count_the_backlog_of_every_namespace(store: Store) -> None:
    """What a server's /metrics reads: the whole store's size and embedding backlog;
    the PostgreSQL pool's figures (SQLite has no pool)."""
    empty = store.gauges()
    assert empty.pending_embeddings == 0 and empty.size_bytes > 0
    for ns in ("mem", "other", "other"):
        store.memories.insert_node(_node(ns))
    found = store.gauges()
    assert found.pending_embeddings == 3 == len(store.search.pending_embeddings(10))
    postgres = type(store).__name__ == "PostgresStore"
    assert bool(found.pool) == postgres
    if postgres:
        assert found.pool["pool_max"] == 4 and found.pool["pool_size"] >= 1
        assert found.pool["requests_num"] > empty.pool.get("requests_num", 0)
