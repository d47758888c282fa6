"""PostgreSQL privacy (layer: storage): forget a person, and vacuum deleted text.

A forget runs in one transaction under an advisory lock on the namespace, so two
servers forgetting the same person remove each memory once. Vectors and full-text
entries live in the node rows and go with them. ``scrub`` vacuums the tables that held
the text: dead tuples become free space the server reuses; WAL segments are recycled by
the server on its own schedule, outside the store's control.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memloci.errors import StorageError
from memloci.storage.aliases import aliases_used, drop_unused_aliases
from memloci.storage.base import Scrub
from memloci.storage.postgres.base import PostgresDatabase
from memloci.storage.postgres.chains import deleting
from memloci.storage.sql.privacy import FORGET_KINDS, SQLPrivacy
from memloci.storage.windows import SQLChain, restart

HELD_SNAPSHOT = (
    "another connection holds a snapshot older than the vacuum, so the dead rows it may "
    "still see stay; the scrub is still due and the next forget_user or scrub finishes it"
)
_SCRUB_TABLES = (
    "nodes",
    "node_bits",
    "versions",
    "edges",
    "entities",
    "entity_names",
    "entity_vectors",
    "entity_profile_vectors",
    "node_entities",
    "memory_users",
    "user_identifiers",
    "threads",
    "decay_state",
    "node_access",
    "consolidation_state",
    "knowledge_chunks",
    "knowledge_sources",
)


def unlink_entities(c: Any, namespace: str, ids: Sequence[str]) -> int:
    """Before memories ``ids`` are hard-deleted (``purge``, ``clear``, pruning): drop
    their entity links; an entity no remaining memory links is deleted (names,
    vectors), the others lose the mentions the removed links counted (never below
    the memories still linking them). Returns how many entities were deleted."""
    used = aliases_used(c, namespace, ids, "%s")
    removed = c.execute(
        "DELETE FROM node_entities WHERE node_id = ANY(%s) RETURNING entity_id",
        (list(ids),),
    ).fetchall()
    drop_unused_aliases(c, namespace, used, "%s")  # the names only their words gave
    counts: dict[str, int] = {}
    for (entity_id,) in removed:
        counts[entity_id] = counts.get(entity_id, 0) + 1
    if not counts:
        return 0
    c.execute(
        "UPDATE entities e SET mention_count = GREATEST(e.mention_count - r.links, l.n_left)"
        " FROM unnest(%s::text[], %s::int[]) AS r(id, links),"
        " LATERAL (SELECT COUNT(*)::int AS n_left FROM node_entities ne"
        " WHERE ne.entity_id = r.id) l"
        " WHERE e.namespace = %s AND e.id = r.id AND l.n_left > 0",
        (list(counts), list(counts.values()), namespace),
    )
    gone = [
        r[0]
        for r in c.execute(
            "SELECT e.id FROM entities e WHERE e.namespace = %s AND e.id = ANY(%s)"
            " AND NOT EXISTS (SELECT 1 FROM node_entities ne WHERE ne.entity_id = e.id)",
            (namespace, list(counts)),
        )
    ]
    if not gone:
        return 0
    c.execute("DELETE FROM entity_names WHERE entity_id = ANY(%s)", (gone,))
    c.execute("DELETE FROM entity_vectors WHERE entity_id = ANY(%s)", (gone,))
    c.execute("DELETE FROM entity_profile_vectors WHERE entity_id = ANY(%s)", (gone,))
    return int(
        c.execute(
            "DELETE FROM entities WHERE namespace = %s AND id = ANY(%s)", (namespace, gone)
        ).rowcount
    )


class PostgresPrivacy(SQLPrivacy[PostgresDatabase]):
    """Forget a person (``delete_user_data``) and vacuum deleted text (``scrub``)."""

    def delete_user_data(self, namespace: str, user_id: str) -> dict[str, int]:
        """See :meth:`memloci.storage.base.Store.delete_user_data`."""
        with self.db.tx() as c:
            self.db.xlock(c, deleting(namespace))
            report = self._forget(c, namespace, user_id)
            if any(report.values()):  # kept in the store: any process's scrub finishes it
                self.db.put_meta(c, "scrub_due", "1")
            return report

    def _forget(self, c: Any, ns: str, user_id: str) -> dict[str, int]:
        out = dict.fromkeys(FORGET_KINDS, 0)
        users = self._merged_users(c, ns, user_id)
        rows = c.execute(
            "SELECT id, embedding IS NOT NULL FROM nodes WHERE namespace = %s"
            " AND user_id = ANY(%s)",
            (ns, users),
        ).fetchall()
        ids = [r[0] for r in rows]
        out["vectors"] = sum(1 for r in rows if r[1])
        # sessions: the user's own, and those of their memories unless another user's
        # memory stays in them
        out["sessions"] = c.execute(
            "DELETE FROM consolidation_state s WHERE s.namespace = %s AND (s.user_id = ANY(%s)"
            " OR s.session_id IN (SELECT f.session_id FROM nodes f WHERE f.namespace = %s"
            " AND f.id = ANY(%s) AND f.session_id IS NOT NULL AND NOT EXISTS (SELECT 1"
            " FROM nodes n WHERE n.namespace = %s AND n.session_id = f.session_id"
            " AND NOT (n.id = ANY(%s)))))",
            (ns, users, ns, ids, ns, ids),
        ).rowcount
        # the turns that stay next to removed ones hold their words in their windows
        stay = SQLChain(c, ns, "%s").beside(ids)
        out["versions"] = c.execute("DELETE FROM versions WHERE node_id = ANY(%s)", (ids,)).rowcount
        out["decay_states"] = c.execute(
            "DELETE FROM decay_state WHERE node_id = ANY(%s)", (ids,)
        ).rowcount
        c.execute("DELETE FROM node_access WHERE node_id = ANY(%s)", (ids,))
        out["edges"] = c.execute(
            "DELETE FROM edges WHERE namespace = %s AND (source_id = ANY(%s)"
            " OR target_id = ANY(%s))",
            (ns, ids, ids),
        ).rowcount
        # entities their memories link to, dropped when no other memory links them
        counted = c.execute(
            "SELECT entity_id, COUNT(*)::int FROM node_entities WHERE node_id = ANY(%s)"
            " GROUP BY entity_id",
            (ids,),
        ).fetchall()
        linked = [r[0] for r in counted]
        used = aliases_used(c, ns, ids, "%s")
        out["entity_links"] = c.execute(
            "DELETE FROM node_entities WHERE node_id = ANY(%s)", (ids,)
        ).rowcount
        drop_unused_aliases(c, ns, used, "%s")  # the names only their words gave
        # those other memories link too lose what the user gave them: their mentions, the
        # aliases only their words used (above), and the summary drawn from every user's
        # facts (maintenance writes it again from the memories left)
        c.execute(
            "UPDATE entities e SET summary = NULL,"
            " mention_count = GREATEST(e.mention_count - r.links, l.n_left)"
            " FROM unnest(%s::text[], %s::int[]) AS r(id, links),"
            " LATERAL (SELECT COUNT(*)::int AS n_left FROM node_entities ne"
            " WHERE ne.entity_id = r.id) l"
            " WHERE e.namespace = %s AND e.id = r.id AND l.n_left > 0",
            ([r[0] for r in counted], [int(r[1]) for r in counted], ns),
        )
        # their profiles' vectors too (made from that summary, or the entity goes)
        c.execute(
            "DELETE FROM entity_profile_vectors WHERE entity_id = ANY(%s)",
            ([r[0] for r in counted],),
        )
        gone = [
            r[0]
            for r in c.execute(
                "SELECT e.id FROM entities e WHERE e.namespace = %s AND e.id = ANY(%s)"
                " AND NOT EXISTS (SELECT 1 FROM node_entities ne WHERE ne.entity_id = e.id)",
                (ns, linked),
            )
        ]
        c.execute("DELETE FROM entity_names WHERE entity_id = ANY(%s)", (gone,))
        c.execute("DELETE FROM entity_vectors WHERE entity_id = ANY(%s)", (gone,))
        c.execute("DELETE FROM entity_profile_vectors WHERE entity_id = ANY(%s)", (gone,))
        out["entities"] = c.execute(
            "DELETE FROM entities WHERE namespace = %s AND id = ANY(%s)", (ns, gone)
        ).rowcount
        out["memories"] = c.execute(
            "DELETE FROM nodes WHERE namespace = %s AND id = ANY(%s)", (ns, ids)
        ).rowcount
        chain = SQLChain(c, ns, "%s")
        out["neighbours_blanked"] = sum(restart(chain, i, column) for i, column in stay)
        for key, table, column in (
            ("threads", "threads", "user_id"),
            ("identifiers", "user_identifiers", "user_id"),
            ("users", "memory_users", "id"),
        ):
            out[key] = c.execute(
                f"DELETE FROM {table} WHERE namespace = %s AND {column} = ANY(%s)", (ns, users)
            ).rowcount
        return {k: int(v) for k, v in out.items()}

    def scrub(self) -> Scrub:
        """``VACUUM`` the tables that held memories and records (it blocks no writer).
        ``done`` is False when another connection holds a snapshot older than the vacuum
        (its dead rows stay: call again later)."""
        if self.db._closed:
            raise StorageError("the store is closed")
        if getattr(self.db._local, "conn", None) is not None:
            raise StorageError("scrub cannot run inside batch()")
        with self.db.errors(), self.db._pool.connection() as conn:
            busy = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
                " AND backend_xmin IS NOT NULL"
            ).fetchone()[0]
            for table in _SCRUB_TABLES:
                conn.execute(f"VACUUM {table}")
            if int(busy) == 0:
                conn.execute("DELETE FROM meta WHERE key = 'scrub_due'")
        if int(busy):
            return Scrub(False, HELD_SNAPSHOT)
        return Scrub(True)
