"""SQLite memories (layer: storage): the reads and edits both backends word alike come
from :mod:`memloci.storage.sql.nodes`; here inserting memories (a fresh id when one is
taken) and what a purge or an edit does to the vectors and the scrub."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memloci.errors import StorageError
from memloci.models import MemoryNode, short_id
from memloci.storage.rows import first_version, node_to_row
from memloci.storage.sql.chains import previous_turn
from memloci.storage.sql.nodes import SQLNodes
from memloci.storage.sqlite.base import IntegrityError, SQLiteDatabase, qs
from memloci.storage.sqlite.privacy import unlink_entities


class SQLiteNodes(SQLNodes[SQLiteDatabase]):
    """Memories, versions and edges on SQLite."""

    def _purging(self, c: Any, namespace: str) -> None:
        self.db._scrub_pending = True  # close() merges the full-text index and the WAL away

    def _text_changed(self, c: Any, rowid: int) -> str:
        self.db.drop_vectors(c, [rowid])
        return ""

    def _unlink_entities(self, c: Any, namespace: str, ids: Sequence[str]) -> int:
        return unlink_entities(c, namespace, ids)

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
        c.execute(self.db.dialect.q(self._version_upsert), first_version(node, row))
        return node

    def insert_node(self, node: MemoryNode, *, link_previous: bool = False) -> MemoryNode:
        with self.db.tx() as c:
            return self._insert_linked(c, node, link_previous)

    def _insert_linked(self, c: Any, node: MemoryNode, link_previous: bool) -> MemoryNode:
        """Insert ``node``; with ``link_previous``, as the next turn of its chain (see
        :mod:`memloci.storage.sql.chains`): a temporal edge from the turn before, and
        the neighbour windows of its full-text row (:mod:`memloci.storage.windows`)."""
        prev = previous_turn(c, self.db.dialect, node) if link_previous else None
        if prev is None:
            return self._insert(c, node, "")
        return self._insert_after(c, node, prev)

    def insert_nodes(self, nodes: Sequence[MemoryNode], *, link_previous: bool = False) -> None:
        with self.db.tx() as c:
            for node in nodes:
                self._insert_linked(c, node, link_previous)
