"""SQLite records (layer: storage): users, threads, entities and API keys come from
:mod:`memloci.storage.sql.records`; here how an entity's newest links are read, the
insert of links, and the vector cache's view of owners.
"""

from __future__ import annotations

from typing import Any

from memloci.storage.sql.records import SQLEntities, SQLPeople, entity_from_row
from memloci.storage.sqlite.base import SQLiteDatabase

_ENTITY_COLS = SQLiteDatabase.cols.entity
_entity_from_row = entity_from_row


class SQLitePeople(SQLPeople[SQLiteDatabase]):
    """Users, threads and API keys on SQLite: the vector cache's view of owners."""

    def _moving_owner(self, c: Any, namespace: str, user_id: str) -> None:
        if self.db._dim is not None:
            # the vector cache keeps each row's owner: re-queue the moved vectors so the
            # next search refreshes them in place (same rowid, a newer sequence number)
            seq = self.db.bump(c, "vec_seq") * 1_000_000 + 1
            c.execute(
                "UPDATE nodes SET embedded = ? WHERE namespace = ? AND user_id = ?"
                " AND scope = 'user' AND embedded > 0",
                (seq, namespace, user_id),
            )


class SQLiteEntities(SQLEntities[SQLiteDatabase]):
    """Entities (with node links) on SQLite."""

    newest_links = (
        "(SELECT node_id FROM node_entities WHERE entity_id = ? ORDER BY rowid DESC LIMIT ?) ne"
        " CROSS JOIN nodes n ON n.id = ne.node_id"
    )

    def _link_rows(self, c: Any, node_id: str, entity_ids: list[str]) -> int:
        return int(
            c.executemany(
                "INSERT OR IGNORE INTO node_entities (node_id, entity_id) VALUES (?, ?)",
                [(node_id, i) for i in entity_ids],
            ).rowcount
        )
