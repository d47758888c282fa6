"""SQLite consolidation and maintenance rows (layer: storage): session state, episode
claims, decay anchors, entity name vectors, causal-pair cursor and named locks.

Episodes carry their own ``consolidated_at`` mark; a session is pending while any of its
episodes is unmarked (partial index ``nodes_unconsolidated``), so a resumed session only
has its new turns consolidated. Turns stored without a session are pending the same way,
grouped by owner. ``consolidation_state`` records when a session was first
seen, who it belongs to and when it was last consolidated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from memloci.models import Entity, MemoryNode, NodeType
from memloci.storage import faults
from memloci.storage.base import DecayCandidate, DecayUpdate, PendingSession, pending_groups
from memloci.storage.rows import NODE_COLUMNS, dt, node_from_row
from memloci.storage.sqlfilter import ts
from memloci.storage.sqlite.base import SQLiteBase, chunks, qs
from memloci.storage.sqlite.records import _ENTITY_COLS, _entity_from_row

_NODE_COLS = ", ".join("n." + c for c in NODE_COLUMNS)
# matches the partial index nodes_unconsolidated (turns with or without a session)
_PENDING = "n.type = 'episodic' AND n.consolidated_at IS NULL"


class SQLiteConsolidation(SQLiteBase):
    """What consolidation and maintenance need beyond nodes, edges and entities."""

    # ------------------------------------------------------------------ sessions
    def register_session(
        self, namespace: str, session: str, *, user: str | None, agent: str | None,
        now: datetime,
    ) -> None:  # fmt: skip
        with self._tx() as c:
            c.execute(
                "INSERT INTO consolidation_state (namespace, session_id, first_seen_at, user_id,"
                " agent_id) VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, session_id) DO NOTHING",
                (namespace, session, ts(now), user, agent),
            )

    def pending_sessions(
        self, namespace: str, *, user: str | None = None, limit: int = 1000
    ) -> list[PendingSession]:
        sql = (
            "SELECT n.session_id, n.user_id, n.agent_id, count(*), min(n.rowid) FROM nodes n"
            f" WHERE n.namespace = ? AND {_PENDING}"
        )
        params: list[Any] = [namespace]
        if user is not None:
            sql += " AND n.user_id = ?"
            params.append(user)
        sql += " GROUP BY n.session_id, n.user_id, n.agent_id ORDER BY min(n.rowid) LIMIT ?"
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
                f" WHERE n.namespace IN ({qs(nss)}) AND {_PENDING})",
                nss,
            ).fetchone()
        return int(row[0])

    def session_episodes(
        self, namespace: str, session: str | None, *, limit: int,
        user: str | None = None, agent: str | None = None,
    ) -> list[MemoryNode]:  # fmt: skip
        which, params = "n.session_id = ?", [session]
        if session is None:  # the owner's turns stored without a session
            which = "n.session_id IS NULL AND n.user_id IS ? AND n.agent_id IS ?"
            params = [user, agent]
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {_NODE_COLS} FROM nodes n WHERE n.namespace = ? AND {which}"
                f" AND {_PENDING} ORDER BY n.rowid LIMIT ?",
                (namespace, *params, limit),
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def claim_episodes(self, namespace: str, ids: Sequence[str], *, now: datetime) -> int:
        claimed = 0
        with self._tx() as c:
            for chunk in chunks(list(dict.fromkeys(ids)), 400):
                claimed += c.execute(
                    f"UPDATE nodes SET consolidated_at = ? WHERE +namespace = ? AND id IN"
                    f" ({qs(chunk)}) AND type = 'episodic' AND consolidated_at IS NULL",
                    [ts(now), namespace, *chunk],
                ).rowcount
        return claimed

    def finish_session(
        self, namespace: str, session: str, *, user: str | None, agent: str | None,
        now: datetime,
    ) -> None:  # fmt: skip
        with self._tx() as c:
            c.execute(
                "INSERT INTO consolidation_state (namespace, session_id, first_seen_at,"
                " consolidated_at, user_id, agent_id) VALUES (?, ?, ?, ?, ?, ?)"
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
                f"SELECT n.rowid, {_NODE_COLS}, d.base, d.anchor FROM nodes n"
                " LEFT JOIN decay_state d ON d.node_id = n.id"
                " WHERE n.namespace = ? AND n.type = ? AND n.valid_until IS NULL"
                " AND n.rowid > ? AND n.decay_rate > 0 ORDER BY n.rowid LIMIT ?",
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
            c.executemany(
                "UPDATE nodes SET confidence = ? WHERE +namespace = ? AND id = ?"
                " AND type <> 'episodic' AND decay_rate > 0",
                [(u.confidence, namespace, u.node_id) for u in updates],
            )
            c.executemany(
                "INSERT OR REPLACE INTO decay_state (node_id, base, anchor) VALUES (?, ?, ?)",
                [(u.node_id, u.base, ts(u.anchor)) for u in updates],
            )
            for chunk in chunks(list(forget), 400):
                c.execute(
                    f"UPDATE nodes SET valid_until = ?, updated_at = ? WHERE +namespace = ?"
                    f" AND id IN ({qs(chunk)}) AND type <> 'episodic' AND decay_rate > 0"
                    " AND valid_until IS NULL",
                    [ts(now), ts(now), namespace, *chunk],
                )
                c.execute(f"DELETE FROM decay_state WHERE node_id IN ({qs(chunk)})", chunk)

    def drop_orphans(self) -> int:
        """Remove decay anchors and entity vectors whose memory or entity is gone."""
        with self._tx() as c:
            gone = c.execute(
                "DELETE FROM decay_state WHERE NOT EXISTS"
                " (SELECT 1 FROM nodes n WHERE n.id = decay_state.node_id)"
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
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {_ENTITY_COLS} FROM entities e WHERE e.namespace = ?"
                " AND e.summary IS NULL AND e.mention_count >= ?"
                " ORDER BY e.mention_count DESC, e.id LIMIT ?",
                (namespace, min_mentions, limit),
            ).fetchall()
        return [_entity_from_row(r) for r in rows]

    def entity_vectors(self, namespace: str, model: str) -> dict[str, bytes]:
        with self._reading() as c:
            rows = c.execute(
                "SELECT entity_id, embedding FROM entity_vectors WHERE namespace = ? AND model = ?",
                (namespace, model),
            ).fetchall()
        # another model's vectors may have another size (its caller checks it); a blob
        # that is no whole number of float32 values is damaged: skipped (resolving
        # entities embeds the name again)
        out = {eid: bytes(blob) for eid, blob in rows if blob and len(blob) % 4 == 0}
        if len(out) < len(rows):
            faults.damaged(self.path, "entity vectors", f"{len(rows) - len(out)} of {len(rows)}")
        return out

    def save_entity_vector(self, namespace: str, entity_id: str, model: str, vector: bytes) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO entity_vectors (entity_id, namespace, model, embedding)"
                " VALUES (?, ?, ?, ?)",
                (entity_id, namespace, model, vector),
            )

    def profile_vectors(self, namespace: str, model: str) -> dict[str, tuple[str, bytes]]:
        with self._reading() as c:
            rows = c.execute(
                "SELECT p.entity_id, p.digest, p.embedding FROM entity_profile_vectors p"
                " JOIN entities e ON e.id = p.entity_id AND e.namespace = p.namespace"
                " AND e.summary IS NOT NULL"
                " WHERE p.namespace = ? AND p.model = ?",
                (namespace, model),
            ).fetchall()
        out = {eid: (d, bytes(b)) for eid, d, b in rows if b and len(b) % 4 == 0}
        if len(out) < len(rows):
            faults.damaged(self.path, "profile vectors", f"{len(rows) - len(out)} of {len(rows)}")
        return out

    def save_profile_vector(
        self, namespace: str, entity_id: str, model: str, digest: str, vector: bytes
    ) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO entity_profile_vectors"
                " (entity_id, namespace, model, digest, embedding) VALUES (?, ?, ?, ?, ?)",
                (entity_id, namespace, model, digest, vector),
            )

    # ------------------------------------------------------------------ causal pairs
    def temporal_pairs(
        self, namespace: str, *, after: int, limit: int
    ) -> list[tuple[int, str, str]]:
        with self._reading() as c:
            rows = c.execute(
                "SELECT rowid, source_id, target_id FROM edges WHERE rowid > ?"
                " AND namespace = ? AND relation = 'temporal' ORDER BY rowid LIMIT ?",
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
        with self._tx() as c:  # the file's write lock: read, judge and take as one step
            row = c.execute(
                "SELECT owner, expires_at FROM locks WHERE name = ?", (name,)
            ).fetchone()
            held = row is not None and row[0] != owner and row[1] > ts(now)
            if held and not (stale is not None and stale(str(row[0]))):
                return False
            c.execute(
                "INSERT OR REPLACE INTO locks (name, owner, expires_at) VALUES (?, ?, ?)",
                (name, owner, ts(now + ttl)),
            )
        return True

    def lock_holder(self, name: str, *, now: datetime) -> tuple[str, datetime] | None:
        with self._reading() as c:
            row = c.execute(
                "SELECT owner, expires_at FROM locks WHERE name = ? AND expires_at > ?",
                (name, ts(now)),
            ).fetchone()
        if row is None:
            return None
        expires = dt(row[1])
        assert expires is not None
        return str(row[0]), expires

    def release_lock(self, name: str, owner: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM locks WHERE name = ? AND owner = ?", (name, owner))
