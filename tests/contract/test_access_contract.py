"""Reads of a memory (``touch``) kept in the narrow ``node_access`` table: the wide
``nodes`` row is never rewritten by a touch, and every reader sees the counts and the
reinforced confidence as before. Unlike the protocol-only suites, these tests look at
the rows with SQL on the store's own database (the point is where the writes land)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from memloci.models import PageRequest, Scope
from memloci.rules import reinforced
from memloci.storage.base import DecayUpdate, NodePatch, Store

from .conftest import StoreFactory
from .test_store_contract import at, flt, make_node


@contextmanager
def raw(factory: StoreFactory) -> Iterator[Callable[[str, tuple[Any, ...]], list[Any]]]:
    """A plain connection to the store's database: run one query, get its rows."""
    if factory.backend == "sqlite":
        conn = sqlite3.connect(factory.location, isolation_level=None)
        try:
            yield lambda sql, params: conn.execute(sql, params).fetchall()
        finally:
            conn.close()
        return
    import psycopg

    with psycopg.connect(factory.location, autocommit=True) as pg:
        pg.execute(f'SET search_path TO "{factory.schema}", public')
        yield lambda sql, params: pg.execute(sql.replace("?", "%s"), params).fetchall()


def row_version(factory: StoreFactory, query: Callable[..., list[Any]], node_id: str) -> Any:
    """What changes whenever the ``nodes`` row is written: PostgreSQL's ``xmin`` (the
    transaction that wrote this row version); on SQLite, the count of updates a trigger
    logs (a row rewritten with the same values still fires it)."""
    if factory.backend == "postgres":
        return query("SELECT xmin::text FROM nodes WHERE id = ?", (node_id,))
    return query("SELECT count(*) FROM nodes_updates WHERE id = ?", (node_id,))


def test_touch_leaves_the_nodes_row_alone(store_factory: StoreFactory) -> None:
    store = store_factory.open()
    node = store.memories.insert_node(make_node("a memory read many times", confidence=0.69))
    other = store.memories.insert_node(make_node("a memory nobody reads", confidence=0.7))
    with raw(store_factory) as query:
        if store_factory.backend == "sqlite":
            query("CREATE TABLE nodes_updates (id TEXT)", ())
            query(
                "CREATE TRIGGER nodes_updated AFTER UPDATE ON nodes"
                " BEGIN INSERT INTO nodes_updates VALUES (new.id); END",
                (),
            )
        before = row_version(store_factory, query, node.id)
        expected = 0.69  # past the other one's 0.7 once reinforced
        for n in range(3):
            store.memories.touch(
                "default", [node.id, other.id] if n == 0 else [node.id], now=at(n + 1)
            )
            expected = reinforced(expected, n)
        assert row_version(store_factory, query, node.id) == before
        stored = query("SELECT access_count, confidence FROM nodes WHERE id = ?", (node.id,))
        assert [tuple(r) for r in stored] == [(0, 0.69)]  # as written
    got = store.memories.get_node("default", node.id)
    assert got is not None
    assert (got.access_count, got.last_accessed) == (3, at(3))
    assert got.confidence == pytest.approx(expected)
    # every reader sees the live values: lists, orders, filters, paging, export, decay
    listed = store.memories.list_nodes(flt(), order="-confidence")
    assert [n.id for n in listed] == [node.id, other.id]
    assert listed[0] == got
    assert [n.id for n in store.memories.list_nodes(flt(min_confidence=expected - 1e-9))] == [
        node.id
    ]
    page = store.pages.page_nodes(flt(), PageRequest(limit=1), order="confidence")
    assert [(n.id, n.access_count) for n in page.items] == [(other.id, 1)]
    page = store.pages.page_nodes(
        flt(), PageRequest(limit=1, cursor=page.next_cursor), order="confidence"
    )
    assert page.items == [got]
    assert {n.id: n for n in store.memories.iter_nodes("default")}[node.id] == got
    candidates = store.jobs.decay_candidates("default", got.type, after=0, limit=10)
    assert {c.node.id: c.node for c in candidates}[node.id] == got


def test_edits_and_decay_after_touches(store: Store) -> None:
    node = store.memories.insert_node(
        make_node("a memory read, edited and decayed", confidence=0.5)
    )
    store.memories.touch("default", [node.id], now=at(1))
    touched = store.memories.get_node("default", node.id)
    assert touched is not None and touched.confidence > 0.5
    # an edit that leaves confidence alone keeps the count and the reinforced value
    edited = store.memories.update_node("default", node.id, NodePatch(category="kept"))
    assert (edited.access_count, edited.confidence) == (1, touched.confidence)
    got = store.memories.get_node("default", node.id)
    assert got is not None and (got.access_count, got.confidence) == (1, touched.confidence)
    # a confidence set outright wins over the reinforced one
    store.memories.update_node("default", node.id, NodePatch(confidence=0.3))
    got = store.memories.get_node("default", node.id)
    assert got is not None and (got.access_count, got.confidence) == (1, 0.3)
    store.memories.touch("default", [node.id], now=at(2))
    got = store.memories.get_node("default", node.id)
    assert got is not None
    assert got.access_count == 2 and got.confidence == pytest.approx(reinforced(0.3, 1))
    # decay lowers what readers see
    store.jobs.apply_decay(
        "default", [DecayUpdate(node.id, 0.2, got.confidence, at(2))], [], now=at(3)
    )
    got = store.memories.get_node("default", node.id)
    assert got is not None and (got.access_count, got.confidence) == (2, 0.2)
    assert got.last_accessed == at(2)


def test_deleting_a_memory_deletes_its_reads(store_factory: StoreFactory) -> None:
    store = store_factory.open()
    gone = store.memories.insert_node(make_node("a memory to purge"))
    cleared = store.memories.insert_node(make_node("a memory to clear", namespace="b"))
    user = store.memories.insert_node(
        make_node("a memory of a person forgotten", scope=Scope.USER, user="ann")
    )
    stays = store.memories.insert_node(make_node("a memory that stays"))
    store.memories.touch("default", [gone.id, user.id, stays.id], now=at(1))
    store.memories.touch("b", [cleared.id], now=at(1))
    assert store.memories.purge_node("default", gone.id)
    assert store.memories.clear("b") == 1
    store.delete_user_data("default", "ann")
    with raw(store_factory) as query:
        left = query("SELECT node_id FROM node_access ORDER BY node_id", ())
    assert [r[0] for r in left] == [stays.id]


def test_concurrent_touches_are_all_counted(store_factory: StoreFactory) -> None:
    first = store_factory.open()
    node = first.memories.insert_node(make_node("a memory read by many at once", confidence=0.2))
    other = first.memories.insert_node(make_node("its neighbour, read alongside", confidence=0.2))
    threads, rounds = 6, 10
    stores = [first, *(store_factory.open() for _ in range(threads - 1))]
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def reader(store: Store, k: int) -> None:
        try:
            start.wait()
            for i in range(rounds):
                ids = [node.id, other.id] if (i + k) % 2 else [other.id, node.id]
                store.memories.touch("default", ids, now=at(1))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=reader, args=(s, k)) for k, s in enumerate(stores)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    expected = 0.2
    for n in range(threads * rounds):
        expected = reinforced(expected, n)
    for got in first.memories.get_nodes("default", [node.id, other.id]):
        assert got.access_count == threads * rounds
        assert got.confidence == pytest.approx(expected)


def test_touches_racing_a_forget_leave_no_reads_behind(store_factory: StoreFactory) -> None:
    first = store_factory.open()
    nodes = [
        first.memories.insert_node(make_node(f"a memory of ann, {i}", scope=Scope.USER, user="ann"))
        for i in range(20)
    ]
    ids = [n.id for n in nodes]
    toucher = store_factory.open()
    errors: list[BaseException] = []
    done, started = threading.Event(), threading.Event()

    def reader() -> None:
        try:
            while not done.is_set():
                toucher.memories.touch("default", ids, now=at(1))
                started.set()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    worker = threading.Thread(target=reader)
    worker.start()
    try:
        assert started.wait(30)  # the forget runs among touches
        first.delete_user_data("default", "ann")
    finally:
        done.set()
        worker.join()
    assert errors == []
    assert first.memories.get_nodes("default", ids) == []
    with raw(store_factory) as query:
        assert query("SELECT node_id FROM node_access", ()) == []
