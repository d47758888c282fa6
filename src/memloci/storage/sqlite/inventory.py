"""Reads over a whole store (layer: storage): every namespace in use, consolidation
sessions and knowledge-chunk vectors (to copy it elsewhere: ``memloci migrate``), and
its gauges (a server's ``/metrics``)."""

from __future__ import annotations

import os

from memloci.storage.base import SessionState, StoreGauges
from memloci.storage.rows import dt
from memloci.storage.sqlite.base import SQLiteBase

_NAMESPACE_TABLES = (
    "nodes", "memory_users", "threads", "entities", "consolidation_state",
    "knowledge_sources", "edges",
)  # fmt: skip


class SQLiteInventory(SQLiteBase):
    def gauges(self) -> StoreGauges:
        """The file's size with its write-ahead log (the pages, for an in-memory store)."""
        with self._reading() as c:
            pending = int(c.execute("SELECT count(*) FROM nodes WHERE embedded = 0").fetchone()[0])
            pages = int(c.execute("PRAGMA page_count").fetchone()[0])
            page_size = int(c.execute("PRAGMA page_size").fetchone()[0])
        size = pages * page_size
        if not self._memory:
            files = (self.path, f"{self.path}-wal", f"{self.path}-shm")
            size = sum(os.path.getsize(f) for f in files if os.path.exists(f))
        return StoreGauges(size_bytes=size, pending_embeddings=pending)

    def record_namespaces(self) -> list[str]:
        """Every namespace holding any record, sorted."""
        union = " UNION ".join(f"SELECT namespace FROM {t}" for t in _NAMESPACE_TABLES)
        with self._reading() as c:
            return sorted(str(r[0]) for r in c.execute(union))

    def sessions(self, namespace: str) -> list[SessionState]:
        """Every session recorded for consolidation in ``namespace``, first seen first."""
        with self._reading() as c:
            rows = c.execute(
                "SELECT session_id, user_id, agent_id, first_seen_at, consolidated_at"
                " FROM consolidation_state WHERE namespace = ?"
                " ORDER BY first_seen_at, session_id",
                (namespace,),
            ).fetchall()
        out = []
        for r in rows:
            first = dt(r[3])
            assert first is not None
            out.append(SessionState(namespace, str(r[0]), r[1], r[2], first, dt(r[4])))
        return out

    def knowledge_vectors(self, namespace: str, source_id: str) -> dict[str, bytes]:
        """Chunk id → float32 vector bytes of a source's chunks that have one."""
        with self._reading() as c:
            rows = c.execute(
                "SELECT id, embedding FROM knowledge_chunks WHERE namespace = ?"
                " AND source_id = ? AND embedding IS NOT NULL ORDER BY ordinal",
                (namespace, source_id),
            ).fetchall()
        return {str(r[0]): bytes(r[1]) for r in rows}
