"""SQLite privacy (layer: storage): forget a person, and leave no deleted text in the file.

Every connection opens with ``PRAGMA secure_delete = ON`` (see
:mod:`memloci.storage.sqlite.base`): SQLite overwrites deleted cells and freed pages with
zeros. That is not all: when SQLite rebalances a b-tree (rows grow as their neighbour
windows are updated, pages split and merge), a row moved to another page can leave a
stale copy of its bytes in the unused space of the page it left, and deleting the row
later does not reach that copy (found by the privacy byte scan, about 1 run in 15).
Deleted text also stays in the full-text index (``nodes_fts`` is contentless with
``contentless_delete``: a delete writes a tombstone, the terms stay in their segment
until it is merged) and in the WAL (old page images until a checkpoint). So
:meth:`SQLitePrivacy.scrub` merges the full-text index, vacuums the file (every page is
written afresh; ~3 s for 100k memories) and checkpoints and truncates the WAL.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any

from memloci.errors import StorageError
from memloci.storage.aliases import aliases_used, drop_unused_aliases
from memloci.storage.sqlite.base import OperationalError, SQLiteBase, chunks, qs
from memloci.storage.windows import SQLChain, restart

# The tables and counts of a forget report (kinds of things removed).
FORGET_KINDS = (
    "users",
    "identifiers",
    "memories",
    "versions",
    "vectors",
    "edges",
    "entity_links",
    "entities",
    "threads",
    "sessions",
    "decay_states",
    "neighbours_blanked",
)
_CHECKPOINT_TRIES = 20


class SQLitePrivacy(SQLiteBase):
    """Forget a person (``delete_user_data``) and scrub deleted text (``scrub``)."""

    _scrub_pending = False  # a hard delete happened since the last scrub (close() scrubs)

    def delete_user_data(self, namespace: str, user_id: str) -> dict[str, int]:
        """Remove everything stored for one person in one namespace, in one transaction.

        The person is ``user_id`` plus every memory user merged into it (transitively).
        Removed: their memories of every type and scope, current or not (with versions,
        vectors, full-text rows, decay anchors, edges touching them and entity links);
        entities no remaining memory links to that only their memories linked; their
        threads; their user records and channel identifiers; the consolidation state of
        their sessions. Temporal neighbours kept (another user's turns) lose the copy of
        a removed turn in their context. Other namespaces are never touched. Returns
        counts per kind (see ``FORGET_KINDS``). The text may remain in free space until
        :meth:`scrub`; the vector cache of every process reloads.
        """
        with self._tx() as c:
            report = self._forget(c, namespace, user_id)
        self._scrub_pending = True
        return report

    def _forget(self, c: Any, ns: str, user_id: str) -> dict[str, int]:
        out = dict.fromkeys(FORGET_KINDS, 0)
        users = [
            r[0]
            for r in c.execute(
                "WITH RECURSIVE m(id) AS (SELECT ? UNION SELECT u.id FROM memory_users u"
                " JOIN m ON u.merged_into = m.id WHERE u.namespace = ?) SELECT id FROM m",
                (user_id, ns),
            )
        ]
        c.execute("CREATE TEMP TABLE IF NOT EXISTS forget_users (id TEXT PRIMARY KEY)")
        c.execute(
            "CREATE TEMP TABLE IF NOT EXISTS forget_nodes (rowid INTEGER PRIMARY KEY,"
            " id TEXT NOT NULL UNIQUE, session_id TEXT)"
        )
        c.execute(
            "CREATE TEMP TABLE IF NOT EXISTS forget_entities (id TEXT PRIMARY KEY, links INTEGER)"
        )
        try:
            c.executemany(
                "INSERT OR IGNORE INTO forget_users (id) VALUES (?)", [(u,) for u in users]
            )
            c.execute(
                "INSERT INTO forget_nodes (rowid, id, session_id) SELECT n.rowid, n.id,"
                " n.session_id FROM forget_users f CROSS JOIN nodes n"
                " ON n.namespace = ? AND n.user_id = f.id",
                (ns,),
            )
            out.update(self._forget_nodes(c, ns))
            out["threads"] = c.execute(
                "DELETE FROM threads WHERE namespace = ? AND user_id IN (SELECT id FROM"
                " forget_users)",
                (ns,),
            ).rowcount
            out["identifiers"] = c.execute(
                "DELETE FROM user_identifiers WHERE namespace = ? AND user_id IN"
                " (SELECT id FROM forget_users)",
                (ns,),
            ).rowcount
            out["users"] = c.execute(
                "DELETE FROM memory_users WHERE namespace = ? AND id IN"
                " (SELECT id FROM forget_users)",
                (ns,),
            ).rowcount
            if out["memories"] or out["vectors"]:
                self._bump(c, "vec_epoch")  # every process drops its cached vectors
        finally:
            for table in ("forget_users", "forget_nodes", "forget_entities"):
                c.execute(f"DELETE FROM temp.{table}")
        return {k: int(v) for k, v in out.items()}

    def _forget_nodes(self, c: Any, ns: str) -> dict[str, int]:
        """Delete the memories listed in ``temp.forget_nodes`` and what hangs off them."""
        out: dict[str, int] = {}
        mine = "SELECT id FROM forget_nodes"
        # sessions: those of the user (by owner), and of their memories unless another
        # user's memory stays in them
        out["sessions"] = c.execute(
            "DELETE FROM consolidation_state WHERE namespace = ? AND (user_id IN"
            " (SELECT id FROM forget_users) OR session_id IN (SELECT f.session_id FROM"
            " forget_nodes f WHERE f.session_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM"
            " nodes n WHERE n.namespace = ? AND n.session_id = f.session_id AND n.rowid NOT IN"
            " (SELECT rowid FROM forget_nodes))))",
            (ns, ns),
        ).rowcount
        # the turns that stay next to removed ones hold their words in their windows
        removed = [r[0] for r in c.execute(mine).fetchall()]
        stay = SQLChain(c, ns).beside(removed)
        out["vectors"] = c.execute(
            "DELETE FROM node_vectors WHERE rowid IN (SELECT rowid FROM forget_nodes)"
        ).rowcount
        out["versions"] = c.execute(f"DELETE FROM versions WHERE node_id IN ({mine})").rowcount
        out["decay_states"] = c.execute(
            f"DELETE FROM decay_state WHERE node_id IN ({mine})"
        ).rowcount
        out["edges"] = c.execute(
            f"DELETE FROM edges WHERE namespace = ? AND (source_id IN ({mine})"
            f" OR target_id IN ({mine}))",
            (ns,),
        ).rowcount
        # entities: those their memories link to, dropped when no other memory links them
        c.execute(
            "INSERT OR IGNORE INTO forget_entities (id, links) SELECT ne.entity_id, COUNT(*)"
            f" FROM node_entities ne WHERE ne.node_id IN ({mine}) GROUP BY ne.entity_id"
        )
        used = aliases_used(c, ns, removed)
        out["entity_links"] = c.execute(
            f"DELETE FROM node_entities WHERE node_id IN ({mine})"
        ).rowcount
        drop_unused_aliases(c, ns, used)  # the names only their words gave
        # those other memories link too lose what the user gave them: their mentions, the
        # aliases only their words used (above), and the summary drawn from every user's
        # facts (maintenance writes it again from the memories left)
        c.execute(
            "UPDATE entities SET summary = NULL, mention_count = MAX(mention_count -"
            " (SELECT f.links FROM forget_entities f WHERE f.id = entities.id),"
            " (SELECT COUNT(*) FROM node_entities ne WHERE ne.entity_id = entities.id))"
            " WHERE namespace = ? AND id IN (SELECT id FROM forget_entities)"
            " AND id IN (SELECT entity_id FROM node_entities)",
            (ns,),
        )
        c.execute(
            "DELETE FROM forget_entities WHERE id IN (SELECT entity_id FROM node_entities)"
            " OR id NOT IN (SELECT id FROM entities WHERE namespace = ?)",
            (ns,),
        )
        gone = "SELECT id FROM forget_entities"
        c.execute(f"DELETE FROM entity_names WHERE entity_id IN ({gone})")
        c.execute(f"DELETE FROM entity_vectors WHERE entity_id IN ({gone})")
        out["entities"] = c.execute(
            f"DELETE FROM entities WHERE namespace = ? AND id IN ({gone})", (ns,)
        ).rowcount
        out["memories"] = c.execute(
            "DELETE FROM nodes WHERE rowid IN (SELECT rowid FROM forget_nodes)"
        ).rowcount
        chain = SQLChain(c, ns)
        out["neighbours_blanked"] = sum(restart(chain, i, column) for i, column in stay)
        return out

    def _unlink_entities(self, c: Any, namespace: str, ids: Sequence[str]) -> int:
        """Before memories ``ids`` are hard-deleted (``purge``, ``clear``, pruning): drop
        their entity links; an entity no remaining memory links is deleted (names,
        vectors), the others lose the mentions the removed links counted (never below
        the memories still linking them). Returns how many entities were deleted."""
        used = aliases_used(c, namespace, ids)
        removed: dict[str, int] = {}
        for chunk in chunks(list(ids), 400):
            q = qs(chunk)
            for entity_id, links in c.execute(
                f"SELECT entity_id, COUNT(*) FROM node_entities WHERE node_id IN ({q})"
                " GROUP BY entity_id",
                chunk,
            ).fetchall():
                removed[entity_id] = removed.get(entity_id, 0) + int(links)
            c.execute(f"DELETE FROM node_entities WHERE node_id IN ({q})", chunk)
        drop_unused_aliases(c, namespace, used)  # the names only their words gave
        gone = 0
        for entity_id, links in removed.items():
            left = c.execute(
                "SELECT COUNT(*) FROM node_entities WHERE entity_id = ?", (entity_id,)
            ).fetchone()[0]
            if left:
                c.execute(
                    "UPDATE entities SET mention_count = MAX(mention_count - ?, ?)"
                    " WHERE namespace = ? AND id = ?",
                    (links, left, namespace, entity_id),
                )
                continue
            c.execute("DELETE FROM entity_names WHERE entity_id = ?", (entity_id,))
            c.execute("DELETE FROM entity_vectors WHERE entity_id = ?", (entity_id,))
            gone += c.execute(
                "DELETE FROM entities WHERE namespace = ? AND id = ?", (namespace, entity_id)
            ).rowcount
        return gone

    def scrub(self) -> bool:
        """Make deleted text unreadable from the files: merge the full-text index (drops
        the terms of deleted rows), vacuum (stale copies of moved rows, slack from writes
        made before secure delete was on), then checkpoint and truncate the WAL. Returns
        False when another connection kept an old snapshot open so the WAL could not be
        truncated (call again); True when the database file and WAL hold no deleted
        content."""
        if self._closed:
            raise StorageError("the store is closed")
        with self._wlock:
            if self._depth:
                raise StorageError("scrub cannot run inside batch()")
            with self._tx() as c:
                c.execute("INSERT INTO nodes_fts (nodes_fts) VALUES ('optimize')")
                if self._has_table("knowledge_fts"):
                    c.execute("INSERT INTO knowledge_fts (knowledge_fts) VALUES ('optimize')")
            if not self._memory:
                self._writer.execute("VACUUM")
            self._scrub_pending = False
            return self._truncate_wal()

    def _truncate_wal(self) -> bool:
        if self._memory:
            return True
        background = self._checkpoints.lock if self._checkpoints else contextlib.nullcontext()
        for attempt in range(_CHECKPOINT_TRIES):
            with background, contextlib.suppress(OperationalError):
                busy, _log, _done = self._writer.execute(
                    "PRAGMA wal_checkpoint(TRUNCATE)"
                ).fetchone()
                if not busy:
                    return True
            time.sleep(0.05 * (attempt + 1))
        return False

    def close(self) -> None:
        """Close; scrub first when memories were hard-deleted since the last scrub."""
        if not self._closed and self._scrub_pending:
            with contextlib.suppress(Exception):
                self.scrub()
        super().close()
