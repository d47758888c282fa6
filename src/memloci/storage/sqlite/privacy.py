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

The scrub never waits for another connection's reads. A reader holding a snapshot from
before the deletion keeps the old pages readable: no checkpoint can overwrite them and
a vacuum then only adds to the WAL. So the scrub first tries to truncate the WAL without
waiting (``busy_timeout = 0``); when a snapshot is in the way it gives up at once
(``Scrub(done=False, reason=…)``), before the vacuum, and the scrub stays due (a ``meta``
row written in the forget's own transaction) for the next forget, ``scrub`` or close.
Writers never queue behind a waiting checkpoint; they wait only for the vacuum itself.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

from memloci.errors import StorageError
from memloci.storage.aliases import aliases_used, drop_unused_aliases
from memloci.storage.base import Scrub
from memloci.storage.sql.privacy import FORGET_KINDS, SQLPrivacy
from memloci.storage.sqlite.base import OperationalError, SQLiteDatabase, chunks, qs
from memloci.storage.windows import SQLChain, restart

# pauses (seconds) between the WAL-truncate attempts of one scrub: each attempt waits for
# nobody, and writers run between them; a snapshot still held after ~0.4 s is reported
_TRUNCATE_PAUSES = (0.02, 0.05, 0.1, 0.2)
HELD_SNAPSHOT = (
    "another connection holds a read snapshot from before the deletion, so its old pages "
    "must stay readable; the scrub is still due and the next forget_user, scrub or close "
    "finishes it once that read ends"
)


def unlink_entities(c: Any, namespace: str, ids: Sequence[str]) -> int:
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
        c.execute("DELETE FROM entity_profile_vectors WHERE entity_id = ?", (entity_id,))
        gone += c.execute(
            "DELETE FROM entities WHERE namespace = ? AND id = ?", (namespace, entity_id)
        ).rowcount
    return gone


class SQLitePrivacy(SQLPrivacy[SQLiteDatabase]):
    """Forget a person (``delete_user_data``) and scrub deleted text (``scrub``)."""

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
        with self.db.tx() as c:
            report = self._forget(c, namespace, user_id)
            if any(report.values()):  # kept in the file: any process's scrub finishes it
                c.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('scrub_due', '1')")
                self.db._scrub_pending = True
        return report

    def _forget(self, c: Any, ns: str, user_id: str) -> dict[str, int]:
        out = dict.fromkeys(FORGET_KINDS, 0)
        users = self._merged_users(c, ns, user_id)
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
                self.db.bump(c, "vec_epoch")  # every process drops its cached vectors
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
        c.execute(f"DELETE FROM node_access WHERE node_id IN ({mine})")
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
        # their profiles' vectors too (made from that summary, or the entity goes)
        c.execute(
            "DELETE FROM entity_profile_vectors WHERE entity_id IN (SELECT id FROM forget_entities)"
        )
        c.execute(
            "DELETE FROM forget_entities WHERE id IN (SELECT entity_id FROM node_entities)"
            " OR id NOT IN (SELECT id FROM entities WHERE namespace = ?)",
            (ns,),
        )
        gone = "SELECT id FROM forget_entities"
        c.execute(f"DELETE FROM entity_names WHERE entity_id IN ({gone})")
        c.execute(f"DELETE FROM entity_vectors WHERE entity_id IN ({gone})")
        c.execute(f"DELETE FROM entity_profile_vectors WHERE entity_id IN ({gone})")
        out["entities"] = c.execute(
            f"DELETE FROM entities WHERE namespace = ? AND id IN ({gone})", (ns,)
        ).rowcount
        out["memories"] = c.execute(
            "DELETE FROM nodes WHERE rowid IN (SELECT rowid FROM forget_nodes)"
        ).rowcount
        chain = SQLChain(c, ns)
        out["neighbours_blanked"] = sum(restart(chain, i, column) for i, column in stay)
        return out

    def scrub(self) -> Scrub:
        """Make deleted text unreadable from the files: merge the full-text index (drops
        the terms of deleted rows), vacuum (stale copies of moved rows, slack from writes
        made before secure delete was on), then checkpoint and truncate the WAL. Never
        waits for another connection's reads (see the module docstring): ``done`` is
        False, with the reason, when a held snapshot kept old pages; call again later."""
        if self.db._closed:
            raise StorageError("the store is closed")
        with self.db._wlock:
            if self.db._depth:
                raise StorageError("scrub cannot run inside batch()")
        # a snapshot from before the deletion pins the old pages: no use vacuuming now
        if not self._truncate_wal():
            return Scrub(False, HELD_SNAPSHOT)
        with self.db._wlock:
            if self.db._depth:
                raise StorageError("scrub cannot run inside batch()")
            with self.db.tx() as c:
                c.execute("INSERT INTO nodes_fts (nodes_fts) VALUES ('optimize')")
                if self.db.has_table("knowledge_fts"):
                    c.execute("INSERT INTO knowledge_fts (knowledge_fts) VALUES ('optimize')")
                # cleared before the vacuum, so no page written after it holds the mark;
                # set again below when the scrub cannot finish
                c.execute("DELETE FROM meta WHERE key = 'scrub_due'")
            self.db._scrub_pending = False
            if not self.db._memory:
                try:
                    self.db._writer.execute("VACUUM")
                except OperationalError as exc:  # another process kept the write lock
                    self._still_due()
                    return Scrub(False, f"the vacuum could not run: {exc}")
        if self._truncate_wal():
            return Scrub(True)
        self._still_due()
        return Scrub(False, HELD_SNAPSHOT)

    def _still_due(self) -> None:
        self.db._scrub_pending = True
        with self.db.tx() as c:
            c.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('scrub_due', '1')")

    @contextlib.contextmanager
    def _no_wait(self) -> Iterator[None]:
        """The writer connection gives up at once on a lock (busy_timeout 0); called
        under the write lock."""
        self.db._writer.execute("PRAGMA busy_timeout = 0")
        try:
            yield
        finally:
            self.db._writer.execute(f"PRAGMA busy_timeout = {int(self.db._busy_timeout * 1000)}")

    def _truncate_wal(self) -> bool:
        """Checkpoint every frame into the file and truncate the WAL; a few attempts
        that wait for nobody (writers run between them). False when a reader's snapshot
        (or another process's write) was still in the way after the last one."""
        if self.db._memory:
            return True
        background = self.db._checkpoints.lock if self.db._checkpoints else contextlib.nullcontext()
        for pause in (*_TRUNCATE_PAUSES, None):
            with self.db._wlock, background, self._no_wait(), contextlib.suppress(OperationalError):
                busy, _log, _done = self.db._writer.execute(
                    "PRAGMA wal_checkpoint(TRUNCATE)"
                ).fetchone()
                if not busy:
                    return True
            if pause is None:
                break
            time.sleep(pause)
        return False

    def before_close(self) -> None:
        """Scrub when memories were hard-deleted since the last scrub (the store is
        about to close)."""
        if not self.db._closed and self.db._scrub_pending:
            with contextlib.suppress(Exception):
                self.scrub()
