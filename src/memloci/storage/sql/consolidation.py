"""Consolidation and maintenance rows (layer: storage): session state, episodes pending,
decay anchors, entity name vectors, the causal-pair cursor and named locks.

Episodes carry their own ``consolidated_at`` mark; a session is pending while any of its
episodes is unmarked (partial index ``nodes_unconsolidated``), so a resumed session only
has its new turns consolidated. Turns stored without a session are pending the same way,
grouped by owner. ``consolidation_state`` records when a session was first seen, who it
belongs to and when it was last consolidated. Claiming episodes, reading entity vectors
and taking a named lock stay with each backend (its writer model decides them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from memloci.models import Entity, MemoryNode, NodeType
from memloci.storage.base import DecayCandidate, DecayUpdate, PendingSession, pending_groups
from memloci.storage.rows import NODE_COLUMNS, dt, node_from_row
from memloci.storage.sql.core import DB, SQLSlice
from memloci.storage.sql.records import entity_from_row
from memloci.storage.sqlfilter import ts

Owner = str | None  # a user or agent id, or none
Stale = Callable[[str], bool] | None  # whether a lock's holder is gone
# matches the partial index nodes_unconsolidated (turns with or without a session)
PENDING = "n.type = 'episodic' AND n.consolidated_at IS NULL"


class SQLConsolidation(SQLSlice[DB]):
    """What consolidation and maintenance need beyond nodes, edges and entities."""

    # ------------------------------------------------------------------ sessions
    def register_session(
        self, namespace: str, session: str, *, user: Owner, agent: Owner, now: datetime
    ) -> None:
        with self.db.tx() as c:
            c.execute(
                self.db.dialect.q(
                    "INSERT INTO consolidation_state (namespace, session_id, first_seen_at,"
                    " user_id, agent_id) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (namespace, session_id) DO NOTHING"
                ),
                (namespace, session, ts(now), user, agent),
            )

    def pending_sessions(
        self, namespace: str, *, user: str | None = None, limit: int = 1000
    ) -> list[PendingSession]:
        first = f"min(n.{self.db.dialect.rowid})"
        sql = (
            f"SELECT n.session_id, n.user_id, n.agent_id, count(*), {first} FROM nodes n"
            f" WHERE n.namespace = ? AND {PENDING}"
        )
        params: list[Any] = [namespace]
        if user is not None:
            sql += " AND n.user_id = ?"
            params.append(user)
        sql += f" GROUP BY n.session_id, n.user_id, n.agent_id ORDER BY {first} LIMIT ?"
        with self.db.reading() as c:
            rows = c.execute(self.db.dialect.q(sql), [*params, limit]).fetchall()
        return pending_groups(namespace, [r[:4] for r in rows])

    def count_pending_sessions(self, namespaces: Sequence[str]) -> int:
        nss = list(namespaces)
        if not nss:
            return 0
        # one per session, and per owner for the turns stored without one (pending_groups)
        owner = "CASE WHEN n.session_id IS NULL THEN n.{} END"
        test, params = self.db.dialect.any("n.namespace", nss)
        row = self.db.select_one(
            "SELECT count(*) FROM (SELECT DISTINCT n.namespace, n.session_id,"
            f" {owner.format('user_id')}, {owner.format('agent_id')} FROM nodes n"
            f" WHERE {test} AND {PENDING}) groups",
            params,
        )
        return int(row[0])

    def session_episodes(
        self,
        namespace: str,
        session: str | None,
        *,
        limit: int,
        user: str | None = None,
        agent: str | None = None,
    ) -> list[MemoryNode]:
        d = self.db.dialect
        which, params = "n.session_id = ?", [session]
        if session is None:  # the owner's turns stored without a session
            which = f"n.session_id IS NULL AND n.user_id {d.same} ? AND n.agent_id {d.same} ?"
            params = [user, agent]
        rows = self.db.select(
            f"SELECT {self.db.cols.node} FROM nodes n WHERE n.namespace = ? AND {which}"
            f" AND {PENDING} ORDER BY n.{d.rowid} LIMIT ?",
            (namespace, *params, limit),
        )
        return [node_from_row(r) for r in rows]

    def finish_session(
        self, namespace: str, session: str, *, user: Owner, agent: Owner, now: datetime
    ) -> None:
        with self.db.tx() as c:
            c.execute(
                self.db.dialect.q(
                    "INSERT INTO consolidation_state (namespace, session_id, first_seen_at,"
                    " consolidated_at, user_id, agent_id) VALUES (?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (namespace, session_id) DO UPDATE SET"
                    " consolidated_at = excluded.consolidated_at,"
                    " user_id = coalesce(consolidation_state.user_id, excluded.user_id),"
                    " agent_id = coalesce(consolidation_state.agent_id, excluded.agent_id)"
                ),
                (namespace, session, ts(now), ts(now), user, agent),
            )

    # ------------------------------------------------------------------ decay
    def decay_candidates(
        self, namespace: str, type: NodeType, *, after: int, limit: int
    ) -> list[DecayCandidate]:
        rowid = f"n.{self.db.dialect.rowid}"
        rows = self.db.select(
            f"SELECT {rowid}, {self.db.cols.node}, d.base, d.anchor FROM nodes n"
            " LEFT JOIN decay_state d ON d.node_id = n.id"
            " WHERE n.namespace = ? AND n.type = ? AND n.valid_until IS NULL"
            f" AND {rowid} > ? AND n.decay_rate > 0 ORDER BY {rowid} LIMIT ?",
            (namespace, type.value, after, limit),
        )
        width = len(NODE_COLUMNS)
        return [
            DecayCandidate(r[0], node_from_row(r[1 : width + 1]), r[width + 1], dt(r[width + 2]))
            for r in rows
        ]

    def apply_decay(
        self,
        namespace: str,
        updates: Sequence[DecayUpdate],
        forget: Sequence[str],
        *,
        now: datetime,
    ) -> None:
        """Set decayed confidences (``updated_at`` stays: decay is not an edit) and
        soft-delete ``forget``. Protected memories (rate 0) and episodes are never changed."""
        d = self.db.dialect
        ns = d.unindexed("namespace")
        with self.db.tx() as c:
            d.many(
                c,
                f"UPDATE nodes SET confidence = ? WHERE {ns} = ? AND id = ?"
                " AND type <> 'episodic' AND decay_rate > 0",
                [(u.confidence, namespace, u.node_id) for u in updates],
            )
            d.many(  # over the reinforced value (memloci.storage.access)
                c,
                "UPDATE node_access SET confidence = ? WHERE namespace = ? AND node_id = ?"
                " AND EXISTS (SELECT 1 FROM nodes n WHERE n.id = node_access.node_id"
                " AND n.type <> 'episodic' AND n.decay_rate > 0)",
                [(u.confidence, namespace, u.node_id) for u in updates],
            )
            d.many(
                c,
                d.upsert("decay_state", ("node_id", "base", "anchor"), ("node_id",)),
                [(u.node_id, u.base, ts(u.anchor)) for u in updates],
            )
            for chunk in d.chunks(forget):
                test, params = d.any("id", chunk)
                c.execute(
                    d.q(
                        f"UPDATE nodes SET valid_until = ?, updated_at = ? WHERE {ns} = ?"
                        f" AND {test} AND type <> 'episodic' AND decay_rate > 0"
                        " AND valid_until IS NULL"
                    ),
                    [ts(now), ts(now), namespace, *params],
                )
                test, params = d.any("node_id", chunk)
                c.execute(d.q(f"DELETE FROM decay_state WHERE {test}"), params)

    def drop_orphans(self) -> int:
        """Remove decay anchors and entity vectors whose memory or entity is gone."""
        with self.db.tx() as c:
            gone = c.execute(
                "DELETE FROM decay_state WHERE NOT EXISTS"
                " (SELECT 1 FROM nodes n WHERE n.id = decay_state.node_id)"
            ).rowcount
            gone += c.execute(
                "DELETE FROM node_access WHERE NOT EXISTS"
                " (SELECT 1 FROM nodes n WHERE n.id = node_access.node_id)"
            ).rowcount
            gone += c.execute(
                "DELETE FROM entity_vectors WHERE NOT EXISTS"
                " (SELECT 1 FROM entities e WHERE e.id = entity_vectors.entity_id)"
            ).rowcount
            gone += c.execute(
                "DELETE FROM entity_profile_vectors WHERE NOT EXISTS"
                " (SELECT 1 FROM entities e WHERE e.id = entity_profile_vectors.entity_id)"
            ).rowcount
        return int(gone)

    # ------------------------------------------------------------------ entities
    def entities_to_enrich(self, namespace: str, *, min_mentions: int, limit: int) -> list[Entity]:
        rows = self.db.select(
            f"SELECT {self.db.cols.entity} FROM entities e WHERE e.namespace = ?"
            " AND e.summary IS NULL AND e.mention_count >= ?"
            " ORDER BY e.mention_count DESC, e.id LIMIT ?",
            (namespace, min_mentions, limit),
        )
        return [entity_from_row(r) for r in rows]

    def save_entity_vector(self, namespace: str, entity_id: str, model: str, vector: bytes) -> None:
        d = self.db.dialect
        columns = ("entity_id", "namespace", "model", "embedding")
        with self.db.tx() as c:
            c.execute(
                d.q(d.upsert("entity_vectors", columns, ("entity_id",))),
                (entity_id, namespace, model, bytes(vector)),
            )

    def profile_vectors(self, namespace: str, model: str) -> dict[str, tuple[str, bytes]]:
        """Entity id → (digest, vector bytes) of the profiles of ``namespace`` embedded
        with ``model`` whose entity still has a summary; a damaged blob (no whole number
        of float32 values) is skipped: maintenance embeds that profile again."""
        rows = self.db.select(
            "SELECT p.entity_id, p.digest, p.embedding FROM entity_profile_vectors p"
            " JOIN entities e ON e.id = p.entity_id AND e.namespace = p.namespace"
            " AND e.summary IS NOT NULL"
            " WHERE p.namespace = ? AND p.model = ?",
            (namespace, model),
        )
        return {str(eid): (str(d), bytes(b)) for eid, d, b in rows if b and len(b) % 4 == 0}

    def save_profile_vector(
        self, namespace: str, entity_id: str, model: str, digest: str, vector: bytes
    ) -> None:
        d = self.db.dialect
        columns = ("entity_id", "namespace", "model", "digest", "embedding")
        with self.db.tx() as c:
            c.execute(
                d.q(d.upsert("entity_profile_vectors", columns, ("entity_id",))),
                (entity_id, namespace, model, digest, bytes(vector)),
            )

    # ------------------------------------------------------------------ causal pairs
    def temporal_pairs(
        self, namespace: str, *, after: int, limit: int
    ) -> list[tuple[int, str, str]]:
        rowid = self.db.dialect.rowid
        rows = self.db.select(
            f"SELECT {rowid}, source_id, target_id FROM edges WHERE {rowid} > ?"
            f" AND namespace = ? AND relation = 'temporal' ORDER BY {rowid} LIMIT ?",
            (after, namespace, limit),
        )
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
        """Take the named lock for ``owner`` until ``now + ttl``: when free, expired or
        already ours, or when ``stale(holder)`` says its holder is gone; atomic."""
        return self._take_lock(name, owner, ts(now), ts(now + ttl), stale)

    def _take_lock(self, name: str, owner: str, now: Any, expires: Any, stale: Stale) -> bool:
        raise NotImplementedError

    def claim_episodes(self, namespace: str, ids: Sequence[str], *, now: datetime) -> int:
        raise NotImplementedError  # each backend's own

    def entity_vectors(self, namespace: str, model: str) -> dict[str, bytes]:
        raise NotImplementedError  # each backend's own

    def lock_holder(self, name: str, *, now: datetime) -> tuple[str, datetime] | None:
        row = self.db.select_one(
            "SELECT owner, expires_at FROM locks WHERE name = ? AND expires_at > ?",
            (name, ts(now)),
        )
        if row is None:
            return None
        expires = dt(row[1])
        assert expires is not None
        return str(row[0]), expires

    def release_lock(self, name: str, owner: str) -> None:
        with self.db.tx() as c:
            c.execute(
                self.db.dialect.q("DELETE FROM locks WHERE name = ? AND owner = ?"), (name, owner)
            )
