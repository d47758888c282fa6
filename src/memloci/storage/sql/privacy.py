"""What forgetting a person reads alike on both backends (layer: storage): who the
person is (with every user merged into them) and whether a scrub is due. The forget
itself and the scrub are each backend's own (temp tables and a vacuum of the file on
SQLite; arrays, an advisory lock and ``VACUUM`` of the tables on PostgreSQL)."""

from __future__ import annotations

from typing import Any

from memloci.storage.base import Scrub
from memloci.storage.sql.core import DB, SQLSlice

# the kinds of things a forget report counts (the keys of ``delete_user_data``'s answer)
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


class SQLPrivacy(SQLSlice[DB]):
    """``Store.delete_user_data``, ``scrub`` and ``scrub_due``."""

    def delete_user_data(self, namespace: str, user_id: str) -> dict[str, int]:
        raise NotImplementedError

    def scrub(self) -> Scrub:
        raise NotImplementedError

    def scrub_due(self) -> bool:
        return self.db.get_meta("scrub_due") is not None

    def _merged_users(self, c: Any, namespace: str, user_id: str) -> list[str]:
        """``user_id`` and every memory user merged into it, transitively."""
        rows = c.execute(
            self.db.dialect.q(
                "WITH RECURSIVE m(id) AS (SELECT CAST(? AS TEXT) UNION SELECT u.id"
                " FROM memory_users u JOIN m ON u.merged_into = m.id WHERE u.namespace = ?)"
                " SELECT id FROM m"
            ),
            (user_id, namespace),
        ).fetchall()
        return [r[0] for r in rows]
