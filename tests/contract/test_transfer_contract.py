"""Import across namespaces, on every backend: ids are unique in the whole store, so a
copy of another namespace's memories gets new ids (its versions and edges follow), and
what the target namespace already holds is skipped — nothing tells the importer which
ids another namespace uses, and no other namespace's record is touched."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from memloci.errors import ConflictError
from memloci.models import (
    Edge,
    EdgeType,
    Entity,
    EntityType,
    KnowledgeChunk,
    KnowledgeSource,
    MemoryNode,
    MemoryUser,
    NodeType,
    Scope,
    Thread,
    ThreadMessage,
    short_id,
)
from memloci.service.transfer import ImportReport, export_lines, import_lines
from memloci.storage.base import Store

from .conftest import EMBED_DIM, EMBED_MODEL

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _node(content: str, namespace: str) -> MemoryNode:
    return MemoryNode(
        id=short_id(), namespace=namespace, type=NodeType.SEMANTIC, content=content,
        scope=Scope.GLOBAL, event_time=T0, created_at=T0, updated_at=T0, valid_from=T0,
    )  # fmt: skip


def _fill_alpha(store: Store) -> tuple[MemoryNode, MemoryNode, Edge]:
    a = store.memories.insert_node(_node("The user lives in Lisbon", "alpha"))
    b = store.memories.insert_node(_node("The user works at Acme Corp", "alpha"))
    edge = Edge(
        id=short_id() + short_id(), namespace="alpha", source_id=a.id, target_id=b.id,
        relation=EdgeType.CAUSAL, valid_from=T0, created_at=T0,
    )  # fmt: skip
    store.memories.insert_edges([edge])
    return a, b, edge


def _import(store: Store, lines: list[str], namespace: str) -> ImportReport:
    return import_lines(store, lines, namespace, embedding_model=EMBED_MODEL, dimension=EMBED_DIM)


def test_id_namespaces_names_the_holder_of_each_id(store: Store) -> None:
    a, _, edge = _fill_alpha(store)
    c = store.memories.insert_node(_node("The user has a cat", "beta"))
    assert store.memories.id_namespaces([a.id, c.id, "zzzzzzzz"]) == {a.id: "alpha", c.id: "beta"}
    assert store.memories.id_namespaces([edge.id, a.id], edges=True) == {edge.id: "alpha"}
    assert store.memories.id_namespaces([]) == {}


def test_import_of_another_namespaces_export_copies_it_with_new_ids(store: Store) -> None:
    a, b, edge = _fill_alpha(store)
    lines = list(export_lines(store, "alpha"))
    report = _import(store, lines, "beta")
    assert (report.nodes, report.skipped, report.edges) == (2, 0, 1)
    copies = {n.content: n for n in store.memories.iter_nodes("beta")}
    assert set(copies) == {a.content, b.content}
    assert {n.id for n in copies.values()}.isdisjoint({a.id, b.id})
    (moved,) = list(store.memories.iter_edges("beta"))  # the edge joins the copies, under a new id
    assert moved.id != edge.id
    assert (moved.source_id, moved.target_id) == (copies[a.content].id, copies[b.content].id)
    versions = {v.node_id for v in store.memories.iter_versions("beta")}
    assert versions == {copies[a.content].id, copies[b.content].id}
    # alpha is untouched: its memories, its edge (not moved to beta), its versions
    assert {n.id for n in store.memories.iter_nodes("alpha")} == {a.id, b.id}
    assert list(store.memories.iter_edges("alpha")) == [edge]
    assert {v.node_id for v in store.memories.iter_versions("alpha")} == {a.id, b.id}
    # the copy is in beta now: a second import skips it there
    again = _import(store, lines, "beta")
    assert (again.nodes, again.skipped, again.edges) == (0, 2, 0)
    assert len(list(store.memories.iter_nodes("beta"))) == 2


def test_import_into_the_same_namespace_skips_what_it_holds(store: Store) -> None:
    _fill_alpha(store)
    lines = list(export_lines(store, "alpha"))
    report = _import(store, lines, "alpha")
    assert (report.nodes, report.skipped, report.edges, report.versions) == (0, 2, 0, 0)
    assert len(list(store.memories.iter_nodes("alpha"))) == 2


# ---------------------------------------------------------------------- beside the memories
def _fill_records(store: Store) -> tuple[MemoryNode, Entity]:
    """Namespace alpha with an entity linked to a memory (and its name vector), a thread,
    a consolidated session and a knowledge source with its chunk and vector."""
    node = store.memories.insert_node(_node("The user's boss is Dana Whitfield", "alpha"))
    dana = store.entities.insert_entity(
        Entity(
            id=short_id(), namespace="alpha", canonical_name="Dana Whitfield",
            type=EntityType.PERSON, aliases=["Dana"], summary="The user's boss",
            first_seen=T0, last_seen=T0, mention_count=3, attributes={"team": "ops"},
        )
    )  # fmt: skip
    store.entities.link_entities("alpha", node.id, [dana.id])
    store.jobs.save_entity_vector(
        "alpha", dana.id, EMBED_MODEL, np.ones(EMBED_DIM, np.float32).tobytes()
    )
    store.people.upsert_thread(
        Thread(
            id="t1", namespace="alpha", user="u1", created_at=T0, updated_at=T0,
            messages=[ThreadMessage(role="user", content="hello", created_at=T0)],
        )
    )  # fmt: skip
    store.jobs.register_session("alpha", "s1", user="u1", agent=None, now=T0)
    store.jobs.finish_session("alpha", "s1", user="u1", agent=None, now=T0)
    source = KnowledgeSource(
        id="KnSrc001", namespace="alpha", collection="ops", path="/docs/keys.md",
        title="Keys", content_hash="h1", size_bytes=30, chunk_count=1,
        embedding_model=EMBED_MODEL, added_at=T0, updated_at=T0,
    )  # fmt: skip
    chunk = KnowledgeChunk(
        id="KnSrc001-0", namespace="alpha", source_id="KnSrc001", collection="ops", ordinal=0,
        text="Rotate API keys every month.", heading="Keys", start_char=0, end_char=28,
        embedding_model=EMBED_MODEL,
    )  # fmt: skip
    store.knowledge.replace_knowledge(source, [chunk], np.ones((1, EMBED_DIM), np.float32))
    return node, dana


def _beside(store: Store, ns: str) -> dict[str, Any]:
    nodes = {n.id: n.content for n in store.memories.iter_nodes(ns)}
    return {
        "entities": [
            e.model_dump(exclude={"id", "namespace"}) for e in store.entities.list_entities(ns)
        ],
        "links": sorted(
            (nodes[n], e.canonical_name)
            for n, es in store.entities.node_entities(ns, list(nodes)).items()
            for e in es
        ),
        "entity_vectors": sorted(store.jobs.entity_vectors(ns, EMBED_MODEL).values()),
        "threads": [
            t.model_dump(exclude={"namespace"})
            for t in (store.people.get_thread(ns, x.id) for x in store.people.list_threads(ns))
            if t is not None
        ],
        "sessions": [
            (s.session, s.user, s.first_seen_at, s.consolidated_at) for s in store.sessions(ns)
        ],
        "knowledge": [
            (
                s.model_dump(exclude={"namespace"}),
                [
                    c.model_dump(exclude={"namespace"})
                    for c in store.knowledge.knowledge_chunks(ns, s.id)
                ],
                store.knowledge_vectors(ns, s.id),
            )
            for s in store.knowledge.knowledge_sources(ns)
        ],
    }


def test_id_namespaces_names_the_holder_of_each_entity(store: Store) -> None:
    _, dana = _fill_records(store)
    assert store.memories.id_namespaces([dana.id, "zzzzzzzz"], entities=True) == {dana.id: "alpha"}
    assert store.memories.id_namespaces([dana.id]) == {}  # not a memory


def test_import_copies_entities_links_threads_sessions_and_knowledge(store: Store) -> None:
    """A backup holds every record of the namespace; copied into beta, the entity gets an
    id derived from its own (ids are unique across the store) and the link follows it;
    alpha is untouched, and a second import adds nothing."""
    _, dana = _fill_records(store)
    want = _beside(store, "alpha")
    lines = list(export_lines(store, "alpha"))
    report = _import(store, lines, "beta")
    assert (report.nodes, report.entities, report.links, report.threads, report.sessions) == (
        1, 1, 1, 1, 1
    )  # fmt: skip
    assert (report.knowledge_sources, report.knowledge_chunks, report.chunks_to_embed) == (1, 1, 0)
    assert _beside(store, "beta") == want
    (copy,) = store.entities.list_entities("beta")
    assert copy.id != dana.id and store.entities.get_entity("alpha", dana.id) == dana
    assert _beside(store, "alpha") == want
    again = _import(store, lines, "beta")
    assert (again.entities, again.links, again.threads, again.sessions) == (0, 0, 0, 0)
    assert again.knowledge_sources == 0
    assert _beside(store, "beta") == want
    same = _import(store, lines, "alpha")  # into its own namespace: everything is there
    assert (same.nodes, same.entities, same.links, same.knowledge_sources) == (0, 0, 0, 0)
    assert _beside(store, "alpha") == want


def test_import_refuses_a_channel_id_another_user_holds(store: Store) -> None:
    store.people.upsert_user(
        MemoryUser(id="carol", namespace="alpha", identifiers={"telegram": "555"}, created_at=T0)
    )
    lines = [
        json.dumps({"kind": "header", "format": "memloci", "version": 1}),
        json.dumps(
            {
                "kind": "user",
                "id": "bob",
                "identifiers": {"telegram": "555"},
                "created_at": T0.isoformat(),
            }
        ),
    ]
    with pytest.raises(ConflictError, match=r"line 2 .*belongs to memory user 'carol'"):
        _import(store, lines, "alpha")
    assert [u.id for u in store.people.list_users("alpha")] == ["carol"]
    assert _import(store, lines, "beta").users == 1  # another namespace's users are apart
