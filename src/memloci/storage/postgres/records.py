"""PostgreSQL records (layer: storage): users, threads, entities and API keys come from
:mod:`memloci.storage.sql.records`; here the reads of an entity's links (over arrays and
``seq``) and the insert of links (one statement over an array).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memloci.models import MemoryNode
from memloci.storage.base import NEWEST_LINKED, NodeFilter
from memloci.storage.postgres.base import PostgresBase
from memloci.storage.rows import node_from_row
from memloci.storage.sql.records import SQLRecords, entity_from_row, thread_from_row
from memloci.storage.sqlfilter import filter_sql

NODE_COLS = PostgresBase.cols.node
_USER_COLS = PostgresBase.cols.user
_THREAD_COLS = PostgresBase.cols.thread
ENTITY_COLS = PostgresBase.cols.entity
_thread_from_row = thread_from_row
__all__ = ["ENTITY_COLS", "NODE_COLS", "PostgresRecords", "entity_from_row"]


class PostgresRecords(SQLRecords, PostgresBase):
    """Users, threads, entities (with node links) and API keys on PostgreSQL."""

    def _link_rows(self, c: Any, node_id: str, entity_ids: list[str]) -> int:
        return int(
            c.execute(
                "INSERT INTO node_entities (node_id, entity_id)"
                " SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                (node_id, entity_ids),
            ).rowcount
        )

    def linked_nodes(
        self, flt: NodeFilter, node_ids: Sequence[str], entity_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        if not node_ids or not entity_ids:
            return {}
        where, params = filter_sql(flt, ph="%s")
        with self._reading() as c:
            rows = c.execute(
                "SELECT ne.node_id, ne.entity_id FROM node_entities ne"
                " JOIN nodes n ON n.id = ne.node_id"
                f" WHERE ne.node_id = ANY(%s) AND ne.entity_id = ANY(%s) AND {where}",
                [list(node_ids), list(entity_ids), *params],
            ).fetchall()
        found: dict[str, set[str]] = {}
        for node_id, entity_id in rows:
            found.setdefault(node_id, set()).add(entity_id)
        return found

    def entity_nodes(self, flt: NodeFilter, entity_id: str, *, limit: int = 20) -> list[MemoryNode]:
        """Memories (visible through ``flt``) linked to an entity, newest first, among
        its last :data:`~memloci.storage.base.NEWEST_LINKED` links (by when the memory
        was stored); types with few memories (facts) are read whole, as on SQLite."""
        where, params = filter_sql(flt, ph="%s")
        with self._reading() as c:
            if flt.types:  # few memories of these types (facts): read them, exact
                types = [t.value for t in flt.types]
                few = (
                    c.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM nodes n WHERE n.namespace = ANY(%s)"
                        " AND n.type = ANY(%s) LIMIT %s) typed",
                        [list(flt.namespaces), types, NEWEST_LINKED + 1],
                    ).fetchone()[0]
                    <= NEWEST_LINKED
                )
                if few:
                    rows = c.execute(
                        f"SELECT {NODE_COLS} FROM nodes n WHERE {where} AND EXISTS"
                        " (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id"
                        " AND ne.entity_id = %s) ORDER BY n.created_at DESC, n.seq DESC"
                        " LIMIT %s",
                        [*params, entity_id, limit],
                    ).fetchall()
                    return [node_from_row(r) for r in rows]
            rows = c.execute(
                f"SELECT {NODE_COLS} FROM (SELECT ne.node_id FROM node_entities ne"
                " JOIN nodes m ON m.id = ne.node_id WHERE ne.entity_id = %s"
                " ORDER BY m.seq DESC LIMIT %s) last JOIN nodes n ON n.id = last.node_id"
                f" WHERE {where} ORDER BY n.created_at DESC, n.seq DESC LIMIT %s",
                [entity_id, NEWEST_LINKED, *params, limit],
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def entity_links_seen(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 200
    ) -> list[tuple[str, bool]]:
        where, params = filter_sql(flt, ph="%s")
        with self._reading() as c:
            rows = c.execute(
                f"SELECT n.id, ({where}) FROM (SELECT ne.node_id FROM node_entities ne"
                " JOIN nodes m ON m.id = ne.node_id WHERE ne.entity_id = %s"
                " ORDER BY m.seq DESC LIMIT %s) last JOIN nodes n ON n.id = last.node_id"
                " WHERE n.namespace = ANY(%s) ORDER BY n.created_at DESC, n.seq DESC",
                [*params, entity_id, limit, list(flt.namespaces)],
            ).fetchall()
        return [(str(i), bool(seen)) for i, seen in rows]
