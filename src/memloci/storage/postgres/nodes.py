"""PostgreSQL memories (layer: storage): the reads and edits both backends word alike
come from :mod:`memloci.storage.sql.nodes`; here inserting memories (pipelined batches,
chain locks) and the locks a purge or a touch takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memloci.errors import StorageError
from memloci.models import MemoryNode, short_id
from memloci.storage.postgres.base import _LOCK_CLASS, PostgresDatabase, chunks
from memloci.storage.postgres.chains import deleting, lock_chain
from memloci.storage.postgres.privacy import unlink_entities
from memloci.storage.rows import first_version, node_to_row
from memloci.storage.sql.chains import previous_turn
from memloci.storage.sql.core import JSON_NODE_COLUMNS
from memloci.storage.sql.nodes import SQLNodes

BULK = 1000  # rows per pipelined batch of a bulk insert
_JSON_COLS = JSON_NODE_COLUMNS


def _placeholders(row: dict[str, Any]) -> str:
    return ", ".join("%s::jsonb" if k in _JSON_COLS else "%s" for k in row)


class PostgresNodes(SQLNodes[PostgresDatabase]):
    """Memories, versions and edges on PostgreSQL."""

    neighbour_order = " ORDER BY seq"

    def _purging(self, c: Any, namespace: str) -> None:
        self.db.xlock(c, deleting(namespace))  # no turn links to one of them meanwhile

    def _touching(self, c: Any, namespace: str) -> None:
        c.execute(  # shared: touches do not wait on each other, only on a delete
            "SELECT pg_advisory_xact_lock_shared(%s, hashtext(%s))",
            (_LOCK_CLASS, f"{self.db.schema or ''}:{deleting(namespace)}"),
        )

    @staticmethod
    def _text_changed(c: Any, rowid: int) -> str:
        return ", embedding = NULL"  # the old vector no longer describes the text

    def _unlink_entities(self, c: Any, namespace: str, ids: Sequence[str]) -> int:
        return unlink_entities(c, namespace, ids)

    # ------------------------------------------------------------------ nodes
    def _insert(self, c: Any, node: MemoryNode, context: str = "") -> MemoryNode:
        for _ in range(8):
            row = node_to_row(node, context)
            inserted = c.execute(
                f"INSERT INTO nodes ({', '.join(row)}) VALUES ({_placeholders(row)})"
                " ON CONFLICT (id) DO NOTHING RETURNING seq",
                list(row.values()),
            ).fetchone()
            if inserted is not None:
                break
            node = node.model_copy(update={"id": short_id()})
        else:  # pragma: no cover - 62^8 ids
            raise StorageError("could not allocate a unique memory id")
        c.execute(self.db.dialect.q(self._version_upsert), first_version(node, row))
        return node

    def insert_node(self, node: MemoryNode, *, link_previous: bool = False) -> MemoryNode:
        return self.db.retrying(lambda c: self._insert_linked(c, node, link_previous))

    def _insert_linked(self, c: Any, node: MemoryNode, link_previous: bool) -> MemoryNode:
        # pipelined: a statement whose result is not read (the chain's lock, the version,
        # the edge) goes out with the next one that is, in order — 4 round trips an add
        with c.pipeline():
            prev = None
            if link_previous and (node.session is not None or node.speaker is not None):
                lock_chain(c, self.db.schema, node)  # one writer per chain, none while deleting
                prev = previous_turn(c, self.db.dialect, node)
            if prev is None:
                return self._insert(c, node, "")
            return self._insert_after(c, node, prev)

    def insert_nodes(self, nodes: Sequence[MemoryNode], *, link_previous: bool = False) -> None:
        def work(c: Any) -> None:
            if link_previous:  # each turn reads the one before it: row by row
                for node in nodes:
                    self._insert_linked(c, node, link_previous)
            else:
                self._insert_many(c, nodes)

        self.db.retrying(work)

    def _insert_many(self, c: Any, nodes: Sequence[MemoryNode]) -> None:
        """Unlinked nodes (bulk loads, migrate, import) in pipelined batches: one round
        trip per ``BULK`` rows instead of two per row. A node whose id is taken gets a
        fresh one through the row-by-row path, as :meth:`_insert` does."""
        for part in chunks(list(nodes), BULK):
            rows = [node_to_row(node) for node in part]
            cur = c.cursor()
            cur.executemany(
                f"INSERT INTO nodes ({', '.join(rows[0])}) VALUES ({_placeholders(rows[0])})"
                " ON CONFLICT (id) DO NOTHING RETURNING id",
                [list(row.values()) for row in rows],
                returning=True,
            )
            landed: set[str] = set()
            while True:
                landed.update(str(r[0]) for r in cur.fetchall())
                if not cur.nextset():
                    break
            versions = []
            for node, row in zip(part, rows, strict=True):
                if node.id not in landed:
                    self._insert(c, node)  # id taken (or twice in the batch): a fresh id
                    continue
                landed.discard(node.id)  # a second node with this id is a conflict
                versions.append(first_version(node, row))
            cur.executemany(self.db.dialect.q(self._version_upsert), versions)
