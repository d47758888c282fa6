"""Reads over a whole store (layer: storage): every namespace in use, consolidation
sessions and knowledge-chunk vectors (to copy it elsewhere: ``memloci migrate``), and
its gauges (a server's ``/metrics``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from memloci.models import StoreStats
from memloci.storage.base import SessionState
from memloci.storage.rows import dt
from memloci.storage.sql.consolidation import SQLConsolidation
from memloci.storage.sql.core import DB, SQLSlice

_NAMESPACE_TABLES = (
    "nodes",
    "memory_users",
    "threads",
    "entities",
    "consolidation_state",
    "knowledge_sources",
    "edges",
)


class SQLInventory(SQLSlice[DB]):
    """Reads over the whole store; the pending-session count comes from ``jobs``."""

    def __init__(self, db: DB, jobs: SQLConsolidation[DB]) -> None:
        super().__init__(db)
        self._jobs = jobs

    def namespaces(self) -> list[str]:
        with self.db.reading() as c:
            rows = c.execute("SELECT DISTINCT namespace FROM nodes ORDER BY 1").fetchall()
        return [r[0] for r in rows]

    def stats(self, namespaces: Sequence[str]) -> StoreStats:
        nss = list(namespaces)
        test, params = self.db.dialect.any("namespace", nss)
        with self.db.reading() as c:

            def counts(sql: str) -> dict[str, int]:  # by key
                rows = c.execute(self.db.dialect.q(sql), params).fetchall()
                return {str(k): int(v) for k, v in sorted(rows)}

            def one(sql: str) -> int:
                return int(c.execute(self.db.dialect.q(sql), params).fetchone()[0])

            by_type = counts(f"SELECT type, count(*) FROM nodes WHERE {test} GROUP BY type")
            current = counts(
                f"SELECT type, count(*) FROM nodes WHERE {test}"
                " AND valid_until IS NULL GROUP BY type"
            )
            edges = counts(f"SELECT relation, count(*) FROM edges WHERE {test} GROUP BY relation")
            entities = one(f"SELECT count(*) FROM entities WHERE {test}")
            users = one(f"SELECT count(*) FROM memory_users WHERE {test}")
            pending = one(f"SELECT count(*) FROM nodes WHERE {test} AND embedded = 0")
            orphans = one(
                f"SELECT count(*) FROM nodes n WHERE n.{test}"
                " AND n.type IN ('semantic', 'opinion') AND n.valid_until IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.namespace = n.namespace"
                " AND e.source_id = n.id)"
                " AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.namespace = n.namespace"
                " AND e.target_id = n.id)"
                " AND NOT EXISTS (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id)"
            )
            size = self.db.size_bytes(c)
        dim = self.db.get_meta("dimension")
        maintained = self.db.get_meta("last_maintenance")
        try:
            last_maintenance = datetime.fromisoformat(maintained) if maintained else None
        except ValueError:
            last_maintenance = None
        if last_maintenance is not None and last_maintenance.tzinfo is None:
            last_maintenance = last_maintenance.replace(tzinfo=UTC)
        return StoreStats(
            nodes_by_type=by_type,
            current_by_type=current,
            edges_by_type=edges,
            entities=entities,
            users=users,
            pending_embeddings=pending,
            size_bytes=size,
            embedding_model=self.db.get_meta("embedding_model"),
            dimension=int(dim) if dim else None,
            namespaces=[ns for ns in self.namespaces() if ns in nss],
            orphans=orphans,
            last_maintenance=last_maintenance,
            pending_sessions=self._jobs.count_pending_sessions(nss),
        )

    def record_namespaces(self) -> list[str]:
        """Every namespace holding any record, sorted."""
        union = " UNION ".join(f"SELECT namespace FROM {t}" for t in _NAMESPACE_TABLES)
        with self.db.reading() as c:
            return sorted(str(r[0]) for r in c.execute(union).fetchall())

    def sessions(self, namespace: str) -> list[SessionState]:
        """Every session recorded for consolidation in ``namespace``, first seen first."""
        rows = self.db.select(
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
        rows = self.db.select(
            "SELECT id, embedding FROM knowledge_chunks WHERE namespace = ?"
            " AND source_id = ? AND embedding IS NOT NULL ORDER BY ordinal",
            (namespace, source_id),
        )
        return {str(r[0]): self.db.vector_bytes(r[1]) for r in rows}
