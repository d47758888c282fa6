"""SQLite backend (layer: storage): the default store, everything in one file.

The reads and edits both backends word alike come from :mod:`memloci.storage.sql`; here
inserting memories, reading many by id, purging and neighbours. Search primitives come
from :mod:`memloci.storage.sqlite.search`, plumbing from :mod:`memloci.storage.sqlite.base`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, cast

from memloci.errors import StorageError
from memloci.models import MemoryNode, StoreGauges, short_id
from memloci.storage.rows import node_to_row
from memloci.storage.sql.chains import previous_turn
from memloci.storage.sql.inventory import SQLInventory
from memloci.storage.sql.nodes import SQLNodes
from memloci.storage.sqlfilter import ts
from memloci.storage.sqlite.base import IntegrityError, qs
from memloci.storage.sqlite.consolidation import SQLiteConsolidation
from memloci.storage.sqlite.doctor import SQLiteDoctor
from memloci.storage.sqlite.knowledge import SQLiteKnowledge
from memloci.storage.sqlite.paging import SQLitePaging
from memloci.storage.sqlite.privacy import SQLitePrivacy
from memloci.storage.sqlite.records import SQLiteRecords
from memloci.storage.sqlite.search import SQLiteSearch
from memloci.storage.sqlite.walks import SQLiteWalks
from memloci.storage.windows import SQLChain, said, window


class SQLiteStore(
    SQLNodes,
    SQLitePaging,
    SQLiteRecords,
    SQLiteSearch,
    SQLiteConsolidation,
    SQLiteKnowledge,
    SQLiteWalks,
    SQLitePrivacy,
    SQLInventory,
    SQLiteDoctor,
):
    """The default store: everything in one SQLite file."""

    supports_vectors = True

    def _vector_bytes(self, value: object) -> bytes:
        return bytes(cast("bytes", value))

    def _purging(self, c: Any, namespace: str) -> None:
        self._scrub_pending = True  # close() merges the full-text index and the WAL away

    def _text_changed(self, c: Any, rowid: int) -> str:
        self._drop_vectors(c, [rowid])
        return ""

    def _size_bytes(self, c: Any) -> int:
        pages = c.execute("PRAGMA page_count").fetchone()[0]
        return int(pages) * int(c.execute("PRAGMA page_size").fetchone()[0])

    def gauges(self) -> StoreGauges:
        """The file's size with its write-ahead log (the pages, for an in-memory store)."""
        with self._reading() as c:
            pending = int(c.execute("SELECT count(*) FROM nodes WHERE embedded = 0").fetchone()[0])
            size = self._size_bytes(c)
        if not self._memory:
            files = (self.path, f"{self.path}-wal", f"{self.path}-shm")
            size = sum(os.path.getsize(f) for f in files if os.path.exists(f))
        return StoreGauges(size_bytes=size, pending_embeddings=pending)

    # ------------------------------------------------------------------ nodes
    def _insert(self, c: Any, node: MemoryNode, context: str = "") -> MemoryNode:
        for _ in range(8):
            row = node_to_row(node, context)
            try:
                c.execute(
                    f"INSERT INTO nodes ({', '.join(row)}) VALUES ({qs(list(row))})",
                    list(row.values()),
                )
                break
            except IntegrityError as exc:
                if "nodes.id" not in str(exc):
                    raise StorageError(f"could not store memory: {exc}") from exc
                node = node.model_copy(update={"id": short_id()})
        else:  # pragma: no cover - 62^8 ids
            raise StorageError("could not allocate a unique memory id")
        c.execute(
            "INSERT OR REPLACE INTO versions (node_id, version, content, value, source_session,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (
                node.id,
                node.version,
                node.content,
                row["value"],
                node.session,
                ts(node.created_at),
            ),
        )
        return node

    def insert_node(self, node: MemoryNode, *, link_previous: bool = False) -> MemoryNode:
        with self._tx() as c:
            return self._insert_linked(c, node, link_previous)

    def _insert_linked(self, c: Any, node: MemoryNode, link_previous: bool) -> MemoryNode:
        """Insert ``node``; with ``link_previous``, as the next turn of its chain (see
        :mod:`memloci.storage.sql.chains`): a temporal edge from the turn before, and
        the neighbour windows of its full-text row (:mod:`memloci.storage.windows`)."""
        prev = previous_turn(c, self.dialect, node) if link_previous else None
        if prev is None:
            return self._insert(c, node, "")
        context = window(said(prev[1], prev[2]), prev[3])
        node = self._insert(c, node, context)
        SQLChain(c, node.namespace).follow(
            prev[0],
            node.id,
            node.created_at.timestamp(),
            (said(node.speaker, node.content), context, ""),
        )
        return node

    def insert_nodes(self, nodes: Sequence[MemoryNode], *, link_previous: bool = False) -> None:
        with self._tx() as c:
            for node in nodes:
                self._insert_linked(c, node, link_previous)
