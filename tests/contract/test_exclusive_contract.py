"""``Store.exclusive(key)``: the check-then-write unit behind fact dedupe.

Reads inside it see the transaction's own rows and vectors; it joins an open
``batch()`` (all or nothing); and two stores on the same location (two connections,
as two processes or servers would have) run ``exclusive`` on one key one at a time, so
the second always sees what the first wrote.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memloci.models import short_id
from memloci.storage.base import PendingEmbedding, Store
from memloci.storage.rows import content_hash

from .conftest import StoreFactory
from .test_store_contract import axis, flt, make_node


def _insert_with_vector(store: Store, text: str, vector: np.ndarray) -> str:
    node = store.memories.insert_node(make_node(text))
    item = PendingEmbedding(node.id, content_hash(text), text, None, None, None)
    assert store.search.save_embeddings([item], vector[None, :]) == 1
    return node.id


def test_exclusive_reads_see_own_rows_and_vectors(store: Store) -> None:
    store.search.vector_search(flt(), axis(0), 1)  # warm any vector cache first
    with store.exclusive("facts:default"):
        node_id = _insert_with_vector(store, "written inside the lock", axis(3))
        found = store.memories.find_by_hash(flt(), content_hash("written inside the lock"))
        assert [n.id for n in found] == [node_id]
        assert store.search.vector_search(flt(), axis(3), 1)[0][0] == node_id
    assert store.search.vector_search(flt(), axis(3), 1)[0][0] == node_id


def test_exclusive_rolls_back_with_its_vectors(store: Store) -> None:
    with pytest.raises(RuntimeError), store.exclusive("facts:default"):
        _insert_with_vector(store, "never committed", axis(5))
        assert store.search.vector_search(flt(), axis(5), 1)  # seen inside
        raise RuntimeError("abort")
    assert store.memories.count_nodes(flt()) == 0
    assert store.search.vector_search(flt(), axis(5), 1) == []
    kept = _insert_with_vector(store, "committed later", axis(6))
    [(found, similarity)] = store.search.vector_search(flt(), axis(6), 1)
    assert found == kept and similarity == pytest.approx(1.0)  # not the rolled-back vector


def test_exclusive_joins_an_open_batch(store: Store) -> None:
    with pytest.raises(RuntimeError), store.batch():
        store.memories.insert_node(make_node("outer write"))
        with store.exclusive("facts:default"):
            store.memories.insert_node(make_node("inner write"))
        raise RuntimeError("abort")
    assert store.memories.count_nodes(flt()) == 0


def test_exclusive_serialises_check_then_insert_across_stores(store_factory: StoreFactory) -> None:
    """Each round: A takes the lock, lets B try to take it, then inserts; B's check must
    see A's row (without the lock B would check first and insert a duplicate)."""
    first, second = store_factory.open(), store_factory.open()
    rounds, dupes = 20, []
    for r in range(rounds):
        text = f"raced fact {r} {short_id()}"
        b_trying = threading.Event()

        def a_job(text: str = text, b_trying: threading.Event = b_trying) -> None:
            with first.exclusive("facts:default"):
                b_trying.wait()
                if not first.memories.find_by_hash(flt(), content_hash(text)):
                    first.memories.insert_node(make_node(text))

        def b_job(text: str = text, b_trying: threading.Event = b_trying) -> None:
            b_trying.set()
            with second.exclusive("facts:default"):
                if not second.memories.find_by_hash(flt(), content_hash(text)):
                    second.memories.insert_node(make_node(text))

        a = threading.Thread(target=a_job)
        a.start()
        b_job()
        a.join()
        dupes.append(len(first.memories.find_by_hash(flt(), content_hash(text))))
    assert dupes == [1] * rounds
