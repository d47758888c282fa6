"""Import across namespaces, on every backend: ids are unique in the whole store, so a
copy of another namespace's memories gets new ids (its versions and edges follow), and
what the target namespace already holds is skipped — nothing tells the importer which
ids another namespace uses, and no other namespace's record is touched."""

from __future__ import annotations

from datetime import UTC, datetime

from memloci.models import Edge, EdgeType, MemoryNode, NodeType, Scope, short_id
from memloci.storage.base import Store
from memloci.transfer import ImportReport, export_lines, import_lines

from .conftest import EMBED_DIM, EMBED_MODEL

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _node(content: str, namespace: str) -> MemoryNode:
    return MemoryNode(
        id=short_id(), namespace=namespace, type=NodeType.SEMANTIC, content=content,
        scope=Scope.GLOBAL, event_time=T0, created_at=T0, updated_at=T0, valid_from=T0,
    )  # fmt: skip


def _fill_alpha(store: Store) -> tuple[MemoryNode, MemoryNode, Edge]:
    a = store.insert_node(_node("The user lives in Lisbon", "alpha"))
    b = store.insert_node(_node("The user works at Acme Corp", "alpha"))
    edge = Edge(
        id=short_id() + short_id(), namespace="alpha", source_id=a.id, target_id=b.id,
        relation=EdgeType.CAUSAL, valid_from=T0, created_at=T0,
    )  # fmt: skip
    store.insert_edges([edge])
    return a, b, edge


def _import(store: Store, lines: list[str], namespace: str) -> ImportReport:
    return import_lines(store, lines, namespace, embedding_model=EMBED_MODEL, dimension=EMBED_DIM)


def test_id_namespaces_names_the_holder_of_each_id(store: Store) -> None:
    a, _, edge = _fill_alpha(store)
    c = store.insert_node(_node("The user has a cat", "beta"))
    assert store.id_namespaces([a.id, c.id, "zzzzzzzz"]) == {a.id: "alpha", c.id: "beta"}
    assert store.id_namespaces([edge.id, a.id], edges=True) == {edge.id: "alpha"}
    assert store.id_namespaces([]) == {}


def test_import_of_another_namespaces_export_copies_it_with_new_ids(store: Store) -> None:
    a, b, edge = _fill_alpha(store)
    lines = list(export_lines(store, "alpha"))
    report = _import(store, lines, "beta")
    assert (report.nodes, report.skipped, report.edges) == (2, 0, 1)
    copies = {n.content: n for n in store.iter_nodes("beta")}
    assert set(copies) == {a.content, b.content}
    assert {n.id for n in copies.values()}.isdisjoint({a.id, b.id})
    (moved,) = list(store.iter_edges("beta"))  # the edge joins the copies, under a new id
    assert moved.id != edge.id
    assert (moved.source_id, moved.target_id) == (copies[a.content].id, copies[b.content].id)
    versions = {v.node_id for v in store.iter_versions("beta")}
    assert versions == {copies[a.content].id, copies[b.content].id}
    # alpha is untouched: its memories, its edge (not moved to beta), its versions
    assert {n.id for n in store.iter_nodes("alpha")} == {a.id, b.id}
    assert list(store.iter_edges("alpha")) == [edge]
    assert {v.node_id for v in store.iter_versions("alpha")} == {a.id, b.id}
    # the copy is in beta now: a second import skips it there
    again = _import(store, lines, "beta")
    assert (again.nodes, again.skipped, again.edges) == (0, 2, 0)
    assert len(list(store.iter_nodes("beta"))) == 2


def test_import_into_the_same_namespace_skips_what_it_holds(store: Store) -> None:
    _fill_alpha(store)
    lines = list(export_lines(store, "alpha"))
    report = _import(store, lines, "alpha")
    assert (report.nodes, report.skipped, report.edges, report.versions) == (0, 2, 0, 0)
    assert len(list(store.iter_nodes("alpha"))) == 2
