"""PostgreSQL consolidation rows (layer: storage): the shared ones are
:mod:`memloci.storage.sql.consolidation`; here claims and named locks as single
conditional statements, so two servers never both win one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memloci.storage.postgres.base import PostgresDatabase
from memloci.storage.sql.consolidation import SQLConsolidation, Stale
from memloci.storage.sqlfilter import ts


class PostgresConsolidation(SQLConsolidation[PostgresDatabase]):
    """What consolidation and maintenance need beyond nodes, edges and entities."""

    def claim_episodes(self, namespace: str, ids: Sequence[str], *, now: datetime) -> int:
        with self.db.tx() as c:
            return int(
                c.execute(
                    # rows locked oldest first, as every writer of several turns does
                    "UPDATE nodes SET consolidated_at = %s WHERE seq IN (SELECT seq FROM nodes"
                    " WHERE namespace = %s AND id = ANY(%s) AND type = 'episodic'"
                    " AND consolidated_at IS NULL ORDER BY seq FOR UPDATE)",
                    (ts(now), namespace, list(dict.fromkeys(ids))),
                ).rowcount
            )

    def entity_vectors(self, namespace: str, model: str) -> dict[str, bytes]:
        with self.db.reading() as c:
            rows = c.execute(
                "SELECT entity_id, embedding FROM entity_vectors"
                " WHERE namespace = %s AND model = %s",
                (namespace, model),
            ).fetchall()
        return {eid: bytes(blob) for eid, blob in rows}

    def _take_lock(self, name: str, owner: str, now: Any, expires: Any, stale: Stale) -> bool:
        """One conditional upsert: taken when free, expired or already ours; else, when
        ``stale(holder)``, a compare-and-set on that holder (another process that took it
        meanwhile keeps it)."""
        with self.db.tx() as c:
            row = c.execute(
                "INSERT INTO locks (name, owner, expires_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,"
                " expires_at = excluded.expires_at"
                " WHERE locks.owner = excluded.owner OR locks.expires_at <= %s RETURNING owner",
                (name, owner, expires, now),
            ).fetchone()
            if row is not None or stale is None:
                return row is not None
            held = c.execute("SELECT owner FROM locks WHERE name = %s", (name,)).fetchone()
            if held is None or not stale(str(held[0])):
                return False
            taken = c.execute(
                "UPDATE locks SET owner = %s, expires_at = %s WHERE name = %s AND owner = %s",
                (owner, expires, name, held[0]),
            ).rowcount
        return bool(taken)
