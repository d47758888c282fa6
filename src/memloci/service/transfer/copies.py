"""Ids for a namespace's copies of records another namespace holds (layer: service helpers).

Memory, edge and entity ids are unique across a store, so an import
(:mod:`memloci.service.transfer`) or a migration (:mod:`memloci.migrate`) that copies
records into a namespace while another namespace of the target holds their ids gives
the copies ids derived from the old id and the namespace: the same copy made again finds
its earlier copy under that id and skips it, so both can be run twice (or completed
after an interruption).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Sequence

from memloci.models import ALPHABET, Edge
from memloci.storage.base import Store

#: Which of some candidate ids are spoken for outside the target store (the records
#: still to copy), so no copy takes an id a later record of the same copy needs.
Taken = Callable[[list[str]], Collection[str]]
NODE_ID_SIZE, EDGE_ID_SIZE = 8, 16


def derived_id(namespace: str, old: str, attempt: int, size: int = NODE_ID_SIZE) -> str:
    """The id of the copy of ``old`` in ``namespace`` (the ``attempt``-th candidate)."""
    digest = hashlib.sha256(f"{namespace}\x00{old}\x00{attempt}".encode()).digest()
    return "".join(ALPHABET[b % len(ALPHABET)] for b in digest[:size])


def copy_ids(
    store: Store,
    namespace: str,
    ids: Sequence[str],
    *,
    taken: Taken,
    edges: bool = False,
    entities: bool = False,
) -> tuple[dict[str, str], set[str]]:
    """The id of the copy in ``namespace`` of each of ``ids`` (memories, or ``edges``, or
    ``entities``, another namespace holds): derived from the id and the namespace, so the
    same copy finds its earlier one again; the next derivation when that id is taken
    elsewhere, or by ``taken``. Returns the new ids and which of ``ids`` already have
    their copy in ``namespace``."""
    size = EDGE_ID_SIZE if edges else NODE_ID_SIZE
    renamed: dict[str, str] = {}
    copied: set[str] = set()
    attempt = dict.fromkeys(ids, 0)
    todo = list(ids)
    while todo:
        offers = {old: derived_id(namespace, old, attempt[old], size) for old in todo}
        held = store.memories.id_namespaces(list(offers.values()), edges=edges, entities=entities)
        busy = set(taken(list(offers.values())))
        chosen = set(renamed.values())
        todo = []
        for old, new in offers.items():
            if held.get(new) == namespace:  # an earlier copy
                renamed[old] = new
                copied.add(old)
            elif new in held or new in busy or new in chosen:
                attempt[old] += 1
                todo.append(old)
            else:
                renamed[old] = new
                chosen.add(new)
    return renamed, copied


def copy_edges(
    store: Store, namespace: str, edges: Sequence[Edge], renamed: dict[str, str], *, taken: Taken
) -> list[Edge]:
    """The edges of ``namespace`` to write into ``store``: their ends renamed as the
    memories were (``renamed``); one whose id the namespace holds already is left out
    (an earlier copy), one whose id another namespace holds gets an id derived from it
    (:func:`copy_ids`), so no other namespace's edge is replaced."""
    if not edges:
        return []
    held = store.memories.id_namespaces([e.id for e in edges], edges=True)
    elsewhere = [e.id for e in edges if e.id in held and held[e.id] != namespace]
    new_ids, copied = copy_ids(store, namespace, elsewhere, taken=taken, edges=True)
    return [
        edge.model_copy(
            update={
                "id": new_ids.get(edge.id, edge.id),
                "source_id": renamed.get(edge.source_id, edge.source_id),
                "target_id": renamed.get(edge.target_id, edge.target_id),
            }
        )
        for edge in edges
        if held.get(edge.id) != namespace and edge.id not in copied
    ]


def entity_copies(
    store: Store, namespace: str, ids: Sequence[str], *, taken: Taken
) -> tuple[dict[str, str], set[str]]:
    """Entities to copy into ``namespace``: the id of each copy whose id another namespace
    holds (derived, :func:`copy_ids`; an earlier copy is found again), and which of
    ``ids`` need not be written (the namespace holds them, under their id or as that
    earlier copy)."""
    held = store.memories.id_namespaces(list(ids), entities=True)
    elsewhere = [i for i in ids if i in held and held[i] != namespace]
    renamed, copied = copy_ids(store, namespace, elsewhere, taken=taken, entities=True)
    return renamed, copied | {i for i in ids if held.get(i) == namespace}
