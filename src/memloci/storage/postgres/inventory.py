"""Reads over a whole store (layer: storage): every namespace in use, consolidation
sessions and knowledge-chunk vectors (to copy it elsewhere: ``memloci migrate``), and
its gauges (a server's ``/metrics``)."""

from __future__ import annotations

from memloci.storage.base import SessionState, StoreGauges
from memloci.storage.postgres.base import PostgresBase
from memloci.storage.postgres.search import _f32
from memloci.storage.rows import dt

_NAMESPACE_TABLES = (
    "nodes", "memory_users", "threads", "entities", "consolidation_state",
    "knowledge_sources", "edges",
)  # fmt: skip


class PostgresInventory(PostgresBase):
    def gauges(self) -> StoreGauges:
        """The whole database's size (``pg_database_size``: every schema in it), the
        backlog, and the pool's figures (its state and counters since it opened)."""
        with self._reading() as c:
            size, pending = c.execute(
                "SELECT pg_database_size(current_database()),"
                " (SELECT count(*) FROM nodes WHERE embedded = 0)"
            ).fetchone()
        pool = {k: int(v) for k, v in self._pool.get_stats().items()}
        return StoreGauges(size_bytes=int(size), pending_embeddings=int(pending), pool=pool)

    def record_namespaces(self) -> list[str]:
        """Every namespace holding any record, sorted."""
        union = " UNION ".join(f"SELECT namespace FROM {t}" for t in _NAMESPACE_TABLES)
        with self._reading() as c:
            return sorted(str(r[0]) for r in c.execute(union).fetchall())

    def sessions(self, namespace: str) -> list[SessionState]:
        """Every session recorded for consolidation in ``namespace``, first seen first."""
        with self._reading() as c:
            rows = c.execute(
                "SELECT session_id, user_id, agent_id, first_seen_at, consolidated_at"
                " FROM consolidation_state WHERE namespace = %s"
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
                "SELECT id, embedding FROM knowledge_chunks WHERE namespace = %s"
                " AND source_id = %s AND embedding IS NOT NULL ORDER BY ordinal",
                (namespace, source_id),
            ).fetchall()
        return {str(r[0]): _f32(r[1]) for r in rows}
