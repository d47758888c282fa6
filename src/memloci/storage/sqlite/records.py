"""SQLite records (layer: storage): users, threads, entities and API keys come from
:mod:`memloci.storage.sql.records`; here the reads of an entity's links, whose plans
SQLite is told (``CROSS JOIN``, ``INDEXED BY``), and the vector cache's view of owners.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memloci.models import MemoryNode
from memloci.storage.base import NEWEST_LINKED, NodeFilter
from memloci.storage.rows import node_from_row
from memloci.storage.sql.records import (
    SQLRecords,
    entity_from_row,
    thread_from_row,
)
from memloci.storage.sqlfilter import filter_sql
from memloci.storage.sqlite.base import SQLiteBase, chunks, qs

_NODE_COLS = SQLiteBase.cols.node
_USER_COLS = SQLiteBase.cols.user
_THREAD_COLS = SQLiteBase.cols.thread
_ENTITY_COLS = SQLiteBase.cols.entity
_entity_from_row = entity_from_row
_thread_from_row = thread_from_row


class SQLiteRecords(SQLRecords, SQLiteBase):
    """Users, threads, entities (with node links) and API keys on SQLite."""

    def _moving_owner(self, c: Any, namespace: str, user_id: str) -> None:
        if self._dim is not None:
            # the vector cache keeps each row's owner: re-queue the moved vectors so the
            # next search refreshes them in place (same rowid, a newer sequence number)
            seq = self._bump(c, "vec_seq") * 1_000_000 + 1
            c.execute(
                "UPDATE nodes SET embedded = ? WHERE namespace = ? AND user_id = ?"
                " AND scope = 'user' AND embedded > 0",
                (seq, namespace, user_id),
            )

    def _link_rows(self, c: Any, node_id: str, entity_ids: list[str]) -> int:
        return int(
            c.executemany(
                "INSERT OR IGNORE INTO node_entities (node_id, entity_id) VALUES (?, ?)",
                [(node_id, i) for i in entity_ids],
            ).rowcount
        )

    def linked_nodes(
        self, flt: NodeFilter, node_ids: Sequence[str], entity_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        if not node_ids or not entity_ids:
            return {}
        where, params = filter_sql(flt)
        found: dict[str, set[str]] = {}
        with self._reading() as c:
            for chunk in chunks(list(node_ids), 400):
                for node_id, entity_id in c.execute(
                    "SELECT ne.node_id, ne.entity_id FROM node_entities ne"
                    " CROSS JOIN nodes n ON n.id = ne.node_id"  # the listed memories first
                    # by the memories' keys: an entity may have thousands of links
                    f" WHERE ne.node_id IN ({qs(chunk)}) AND +ne.entity_id IN"
                    f" ({qs(list(entity_ids))}) AND {where}",
                    [*chunk, *entity_ids, *params],
                ):
                    found.setdefault(node_id, set()).add(entity_id)
        return found

    def entity_nodes(self, flt: NodeFilter, entity_id: str, *, limit: int = 20) -> list[MemoryNode]:
        """Memories (visible through ``flt``) linked to an entity, newest first, among
        its last :data:`~memloci.storage.base.NEWEST_LINKED` links (bounded work for a
        speaker linked to every turn they said: the context block asks on every call).
        When ``flt`` names types that have few memories (the facts of a conversation
        store), those are read instead, each checked for the link: exact and cheaper."""
        where, params = filter_sql(flt)
        with self._reading() as c:
            if flt.types:
                types = [t.value for t in flt.types]
                few = (
                    c.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM nodes n INDEXED BY nodes_ns_type"
                        f" WHERE n.namespace IN ({qs(flt.namespaces)}) AND n.type IN ({qs(types)})"
                        " LIMIT ?)",
                        [*flt.namespaces, *types, NEWEST_LINKED + 1],
                    ).fetchone()[0]
                    <= NEWEST_LINKED
                )
                if few:
                    rows = c.execute(
                        f"SELECT {_NODE_COLS} FROM nodes n WHERE {where} AND EXISTS"
                        " (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id"
                        " AND ne.entity_id = ?) ORDER BY n.created_at DESC, n.rowid DESC"
                        " LIMIT ?",
                        [*params, entity_id, limit],
                    ).fetchall()
                    return [node_from_row(r) for r in rows]
            rows = c.execute(
                f"SELECT {_NODE_COLS} FROM (SELECT node_id FROM node_entities"
                " WHERE entity_id = ? ORDER BY rowid DESC LIMIT ?) ne"
                f" CROSS JOIN nodes n ON n.id = ne.node_id WHERE {where}"
                " ORDER BY n.created_at DESC, n.rowid DESC LIMIT ?",
                [entity_id, NEWEST_LINKED, *params, limit],
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def entity_links_seen(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 200
    ) -> list[tuple[str, bool]]:
        where, params = filter_sql(flt)
        with self._reading() as c:
            rows = c.execute(
                f"SELECT n.id, CASE WHEN {where} THEN 1 ELSE 0 END FROM (SELECT node_id"
                " FROM node_entities WHERE entity_id = ? ORDER BY rowid DESC LIMIT ?) ne"
                f" CROSS JOIN nodes n ON n.id = ne.node_id WHERE n.namespace IN"
                f" ({qs(flt.namespaces)}) ORDER BY n.created_at DESC, n.rowid DESC",
                [*params, entity_id, limit, *flt.namespaces],
            ).fetchall()
        return [(str(i), bool(seen)) for i, seen in rows]
