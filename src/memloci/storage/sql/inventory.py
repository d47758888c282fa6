"""Reads over a whole store (layer: storage): every namespace in use, consolidation
sessions and knowledge-chunk vectors (to copy it elsewhere: ``memloci migrate``), and
its gauges (a server's ``/metrics``)."""

from __future__ import annotations

from memloci.storage.base import SessionState
from memloci.storage.rows import dt
from memloci.storage.sql.core import SQLCore

_NAMESPACE_TABLES = (
    "nodes",
    "memory_users",
    "threads",
    "entities",
    "consolidation_state",
    "knowledge_sources",
    "edges",
)


class SQLInventory(SQLCore):
    def _vector_bytes(self, value: object) -> bytes:
        """A stored vector as float32 bytes."""
        raise NotImplementedError

    def record_namespaces(self) -> list[str]:
        """Every namespace holding any record, sorted."""
        union = " UNION ".join(f"SELECT namespace FROM {t}" for t in _NAMESPACE_TABLES)
        with self._reading() as c:
            return sorted(str(r[0]) for r in c.execute(union).fetchall())

    def sessions(self, namespace: str) -> list[SessionState]:
        """Every session recorded for consolidation in ``namespace``, first seen first."""
        rows = self._select(
            "SELECT session_id, user_id, agent_id, first_seen_at, consolidated_at"
            " FROM consolidation_state WHERE namespace = ?"
            " ORDER BY first_seen_at, session_id",
            (namespace,),
        )
        out = []
        for r in rows:
            first = dt(r[3])
            assert first is not None
            out.append(SessionState(namespace, str(r[0]), r[1], r[2], first, dt(r[4])))
        return out

    def knowledge_vectors(self, namespace: str, source_id: str) -> dict[str, bytes]:
        """Chunk id → float32 vector bytes of a source's chunks that have one."""
        rows = self._select(
            "SELECT id, embedding FROM knowledge_chunks WHERE namespace = ?"
            " AND source_id = ? AND embedding IS NOT NULL ORDER BY ordinal",
            (namespace, source_id),
        )
        return {str(r[0]): self._vector_bytes(r[1]) for r in rows}
