"""PostgreSQL records (layer: storage): users, threads, entities and API keys come from
:mod:`memloci.storage.sql.records`; here how an entity's newest links are read (by
``seq``) and the insert of links (one statement over an array).
"""

from __future__ import annotations

from typing import Any

from memloci.storage.postgres.base import PostgresDatabase
from memloci.storage.sql.records import SQLEntities, entity_from_row

NODE_COLS = PostgresDatabase.cols.node
ENTITY_COLS = PostgresDatabase.cols.entity
__all__ = ["ENTITY_COLS", "NODE_COLS", "PostgresEntities", "entity_from_row"]


class PostgresEntities(SQLEntities[PostgresDatabase]):
    """Entities (with node links) on PostgreSQL."""

    newest_links = (
        "(SELECT ne.node_id FROM node_entities ne JOIN nodes m ON m.id = ne.node_id"
        " WHERE ne.entity_id = ? ORDER BY m.seq DESC LIMIT ?) last"
        " JOIN nodes n ON n.id = last.node_id"
    )

    def _link_rows(self, c: Any, node_id: str, entity_ids: list[str]) -> int:
        return int(
            c.execute(
                "INSERT INTO node_entities (node_id, entity_id)"
                " SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                (node_id, entity_ids),
            ).rowcount
        )
