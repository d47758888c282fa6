"""PostgreSQL consolidation and maintenance rows (layer: storage): session state, episode
claims, decay anchors, entity name vectors, causal-pair cursor and named locks.

Same model as the SQLite store: episodes carry their own ``consolidated_at`` mark and a
session is pending while any of its episodes is unmarked. Claims and named locks are
single conditional statements, so two servers never both win one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from memloci.models import Entity, MemoryNode, NodeType
from memloci.storage.base import DecayCandidate, DecayUpdate, PendingSession, pending_groups
from memloci.storage.postgres.base import PostgresBase
from memloci.storage.postgres.records import ENTITY_COLS, NODE_COLS, entity_from_row
from memloci.storage.rows import NODE_COLUMNS, dt, node_from_row
from memloci.storage.sqlfilter import ts

# matches the partial index nodes_unconsolidated (turns with or without a session)
_PENDING = "n.type = 'episodic' AND n.consolidated_at IS NULL"


class PostgresConsolidation(PostgresBase):
    """What consolidation and maintenance need beyond nodes, edges and entities."""

    # ------------------------------------------------------------------ sessions
    def register_session(
        self, namespace: str, session: str, *, user: str | None, agent: str | None,
        now: datetime,
    ) -> None:  # fmt: skip
        with self._tx() as c:
            c.execute(
                "INSERT INTO consolidation_state (namespace, session_id, first_seen_at, user_id,"
                " agent_id) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (namespace, session_id) DO NOTHING",
                (namespace, session, ts(now), user, agent),
            )

    def pending_sessions(
        self, namespace: str, *, user: str | None = None, limit: int = 1000
    ) -> list[PendingSession]:
        sql = (
            "SELECT n.session_id, n.user_id, n.agent_id, count(*), min(n.seq) FROM nodes n"
            f" WHERE n.namespace = %s AND {_PENDING}"
        )
        params: list[Any] = [namespace]
        if user is not None:
            sql += " AND n.user_id = %s"
            params.append(user)
        sql += " GROUP BY n.session_id, n.user_id, n.agent_id ORDER BY min(n.seq) LIMIT %s"
        with self._reading() as c:
            rows = c.execute(sql, [*params, limit]).fetchall()
        return pending_groups(namespace, [r[:4] for r in rows])

    def count_pending_sessions(self, namespaces: Sequence[str]) -> int:
        nss = list(namespaces)
        if not nss:
            return 0
        # one per session, and per owner for the turns stored without one (pending_groups)
        owner = "CASE WHEN n.session_id IS NULL THEN n.{} END"
        with self._reading() as c:
            row = c.execute(
                "SELECT count(*) FROM (SELECT DISTINCT n.namespace, n.session_id,"
                f" {owner.format('user_id')}, {owner.format('agent_id')} FROM nodes n"
                f" WHERE n.namespace = ANY(%s) AND {_PENDING}) groups",
                (nss,),
            ).fetchone()
        return int(row[0])

    def session_episodes(
        self, namespace: str, session: str | None, *, limit: int,
        user: str | None = None, agent: str | None = None,
    ) -> list[MemoryNode]:  # fmt: skip
        if session is None:
            which = (
                "n.session_id IS NULL AND n.user_id IS NOT DISTINCT FROM %s"
                " AND n.agent_id IS NOT DISTINCT FROM %s"
            )
            params: list[Any] = [user, agent]
        else:
            which, params = "n.session_id = %s", [session]
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {NODE_COLS} FROM nodes n WHERE n.namespace = %s AND {which}"
                f" AND {_PENDING} ORDER BY n.seq LIMIT %s",
                (namespace, *params, limit),
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def claim_episodes(self, namespace: str, ids: Sequence[str], *, now: datetime) -> int:
        with self._tx() as c:
            return int(
                c.execute(
                    # rows locked oldest first, as every writer of several turns does
                    "UPDATE nodes SET consolidated_at = %s WHERE seq IN (SELECT seq FROM nodes"
                    " WHERE namespace = %s AND id = ANY(%s) AND type = 'episodic'"
                    " AND consolidated_at IS NULL ORDER BY seq FOR UPDATE)",
                    (ts(now), namespace, list(dict.fromkeys(ids))),
                ).rowcount
            )

    def finish_session(
        self, namespace: str, session: str, *, user: str | None, agent: str | None,
        now: datetime,
    ) -> None:  # fmt: skip
        with self._tx() as c:
            c.execute(
                "INSERT INTO consolidation_state (namespace, session_id, first_seen_at,"
                " consolidated_at, user_id, agent_id) VALUES (%s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (namespace, session_id) DO UPDATE SET"
                " consolidated_at = excluded.consolidated_at,"
                " user_id = coalesce(consolidation_state.user_id, excluded.user_id),"
                " agent_id = coalesce(consolidation_state.agent_id, excluded.agent_id)",
                (namespace, session, ts(now), ts(now), user, agent),
            )

    # ------------------------------------------------------------------ decay
    def decay_candidates(
        self, namespace: str, type: NodeType, *, after: int, limit: int
    ) -> list[DecayCandidate]:
        with self._reading() as c:
            rows = c.execute(
                f"SELECT n.seq, {NODE_COLS}, d.base, d.anchor FROM nodes n"
                " LEFT JOIN decay_state d ON d.node_id = n.id"
                " WHERE n.namespace = %s AND n.type = %s AND n.valid_until IS NULL"
                " AND n.seq > %s AND n.decay_rate > 0 ORDER BY n.seq LIMIT %s",
                (namespace, type.value, after, limit),
            ).fetchall()
        width = len(NODE_COLUMNS)
        return [
            DecayCandidate(r[0], node_from_row(r[1 : width + 1]), r[width + 1], dt(r[width + 2]))
            for r in rows
        ]

    def apply_decay(
        self, namespace: str, updates: Sequence[DecayUpdate], forget: Sequence[str], *,
        now: datetime,
    ) -> None:  # fmt: skip
        """Set decayed confidences (``updated_at`` stays: decay is not an edit) and
        soft-delete ``forget``. Protected memories (rate 0) and episodes are never changed."""
        with self._tx() as c:
            cur = c.cursor()
            cur.executemany(
                "UPDATE nodes SET confidence = %s WHERE namespace = %s AND id = %s"
                " AND type <> 'episodic' AND decay_rate > 0",
                [(u.confidence, namespace, u.node_id) for u in updates],
            )
            cur.executemany(
                "INSERT INTO decay_state (node_id, base, anchor) VALUES (%s, %s, %s)"
                " ON CONFLICT (node_id) DO UPDATE SET base = excluded.base,"
                " anchor = excluded.anchor",
                [(u.node_id, u.base, ts(u.anchor)) for u in updates],
            )
            if forget:
                c.execute(
                    "UPDATE nodes SET valid_until = %s, updated_at = %s WHERE namespace = %s"
                    " AND id = ANY(%s) AND type <> 'episodic' AND decay_rate > 0"
                    " AND valid_until IS NULL",
                    (ts(now), ts(now), namespace, list(forget)),
                )
                c.execute("DELETE FROM decay_state WHERE node_id = ANY(%s)", (list(forget),))

    def drop_orphans(self) -> int:
        """Remove decay anchors and entity vectors whose memory or entity is gone."""
        with self._tx() as c:
            gone = c.execute(
                "DELETE FROM decay_state d WHERE NOT EXISTS"
                " (SELECT 1 FROM nodes n WHERE n.id = d.node_id)"
            ).rowcount
            gone += c.execute(
                "DELETE FROM entity_vectors v WHERE NOT EXISTS"
                " (SELECT 1 FROM entities e WHERE e.id = v.entity_id)"
            ).rowcount
            gone += c.execute(
                "DELETE FROM entity_profile_vectors v WHERE NOT EXISTS"
                " (SELECT 1 FROM entities e WHERE e.id = v.entity_id)"
            ).rowcount
        return int(gone)

    # ------------------------------------------------------------------ entities
    def entities_to_enrich(self, namespace: str, *, min_mentions: int, limit: int) -> list[Entity]:
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {ENTITY_COLS} FROM entities e WHERE e.namespace = %s"
                " AND e.summary IS NULL AND e.mention_count >= %s"
                " ORDER BY e.mention_count DESC, e.id LIMIT %s",
                (namespace, min_mentions, limit),
            ).fetchall()
        return [entity_from_row(r) for r in rows]

    def entity_vectors(self, namespace: str, model: str) -> dict[str, bytes]:
        with self._reading() as c:
            rows = c.execute(
                "SELECT entity_id, embedding FROM entity_vectors"
                " WHERE namespace = %s AND model = %s",
                (namespace, model),
            ).fetchall()
        return {eid: bytes(blob) for eid, blob in rows}

    def save_entity_vector(self, namespace: str, entity_id: str, model: str, vector: bytes) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO entity_vectors (entity_id, namespace, model, embedding)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (entity_id) DO UPDATE SET"
                " namespace = excluded.namespace, model = excluded.model,"
                " embedding = excluded.embedding",
                (entity_id, namespace, model, bytes(vector)),
            )

    def profile_vectors(self, namespace: str, model: str) -> dict[str, tuple[str, bytes]]:
        with self._reading() as c:
            rows = c.execute(
                "SELECT p.entity_id, p.digest, p.embedding FROM entity_profile_vectors p"
                " JOIN entities e ON e.id = p.entity_id AND e.namespace = p.namespace"
                " AND e.summary IS NOT NULL"
                " WHERE p.namespace = %s AND p.model = %s",
                (namespace, model),
            ).fetchall()
        return {eid: (d, bytes(b)) for eid, d, b in rows if b and len(b) % 4 == 0}

    def save_profile_vector(
        self, namespace: str, entity_id: str, model: str, digest: str, vector: bytes
    ) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO entity_profile_vectors"
                " (entity_id, namespace, model, digest, embedding)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (entity_id) DO UPDATE SET"
                " namespace = excluded.namespace, model = excluded.model,"
                " digest = excluded.digest, embedding = excluded.embedding",
                (entity_id, namespace, model, digest, bytes(vector)),
            )

    # ------------------------------------------------------------------ causal pairs
    def temporal_pairs(
        self, namespace: str, *, after: int, limit: int
    ) -> list[tuple[int, str, str]]:
        with self._reading() as c:
            rows = c.execute(
                "SELECT seq, source_id, target_id FROM edges WHERE seq > %s"
                " AND namespace = %s AND relation = 'temporal' ORDER BY seq LIMIT %s",
                (after, namespace, limit),
            ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    # ------------------------------------------------------------------ locks
    def acquire_lock(
        self,
        name: str,
        owner: str,
        *,
        now: datetime,
        ttl: timedelta,
        stale: Callable[[str], bool] | None = None,
    ) -> bool:
        """One conditional upsert: taken when free, expired or already ours; else, when
        ``stale(holder)``, a compare-and-set on that holder (another process that took it
        meanwhile keeps it)."""
        with self._tx() as c:
            row = c.execute(
                "INSERT INTO locks (name, owner, expires_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,"
                " expires_at = excluded.expires_at"
                " WHERE locks.owner = excluded.owner OR locks.expires_at <= %s RETURNING owner",
                (name, owner, ts(now + ttl), ts(now)),
            ).fetchone()
            if row is not None or stale is None:
                return row is not None
            held = c.execute("SELECT owner FROM locks WHERE name = %s", (name,)).fetchone()
            if held is None or not stale(str(held[0])):
                return False
            taken = c.execute(
                "UPDATE locks SET owner = %s, expires_at = %s WHERE name = %s AND owner = %s",
                (owner, ts(now + ttl), name, held[0]),
            ).rowcount
        return bool(taken)

    def lock_holder(self, name: str, *, now: datetime) -> tuple[str, datetime] | None:
        with self._reading() as c:
            row = c.execute(
                "SELECT owner, expires_at FROM locks WHERE name = %s AND expires_at > %s",
                (name, ts(now)),
            ).fetchone()
        if row is None:
            return None
        expires = dt(row[1])
        assert expires is not None
        return str(row[0]), expires

    def release_lock(self, name: str, owner: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM locks WHERE name = %s AND owner = %s", (name, owner))
