"""PostgreSQL graph walks (layer: storage): edges by relation, entity neighbourhoods.

Every walk is bounded by a :class:`~memloci.storage.base.NodeFilter`: a node the filter
hides is neither returned nor walked through. Same semantics and ordering as the SQLite
walks; each step is one indexed query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memloci.errors import ValidationError
from memloci.storage.base import NEWEST_LINKED, NodeFilter
from memloci.storage.names import (
    MAX_PROBES,
    given_rows,
    prefix_bounds,
)
from memloci.storage.postgres.base import PostgresDatabase
from memloci.storage.postgres.records import ENTITY_COLS
from memloci.storage.postgres.search import ranked_nodes
from memloci.storage.sql.walks import SQLWalks
from memloci.storage.sqlfilter import filter_sql


class PostgresWalks(SQLWalks[PostgresDatabase]):
    """Graph walk queries for the retrieval pipeline's graph strategies."""

    walk_order = " ORDER BY e.seq"
    people_sql = (
        "SELECT {cols} FROM entities e WHERE e.type = 'person' AND e.id IN"
        " (SELECT x.entity_id FROM entity_names x WHERE {ns} AND ({ranges}))"
        " ORDER BY e.mention_count DESC, e.id LIMIT ?"
    )

    def _named_rows(self, namespaces: Sequence[str], spans: list[str], probes: Any) -> list[Any]:
        bounds = prefix_bounds(list(probes)[:MAX_PROBES])
        select = (
            f"SELECT x.name_norm, {ENTITY_COLS} FROM entity_names x"
            " JOIN entities e ON e.id = x.entity_id"
        )
        sql = f"{select} WHERE x.namespace = ANY(%s) AND x.name_norm = ANY(%s)"
        params: list[Any] = [list(namespaces), list(spans)]
        if bounds:  # people by their given name: "Caroline" → "Caroline Okafor"
            # ~>=~ / ~<~ compare bytewise, as the entity_names_prefix index does
            ranges = " OR ".join(["(x.name_norm ~>=~ %s AND x.name_norm ~<~ %s)"] * len(bounds))
            sql = (
                f"SELECT 0 AS given, * FROM ({sql}) exact UNION ALL SELECT 1, * FROM ({select}"
                f" WHERE x.namespace = ANY(%s) AND ({ranges}) AND e.type = 'person') given"
            )
            params += [list(namespaces), *(b for pair in bounds for b in pair)]
        else:
            sql = f"SELECT 0 AS given, * FROM ({sql}) exact"
        with self.db.reading() as c:
            found = c.execute(f"{sql} ORDER BY mention_count DESC, id", params).fetchall()
        rows = [r[1:] for r in found if not r[0]]
        rows += given_rows([r[1:] for r in found if r[0]], probes)
        return rows

    def _newest_linked(self, flt: NodeFilter, ids: list[str], limit: int) -> list[str]:
        where, params = filter_sql(flt, ph="%s")
        # the last NEWEST_LINKED links (by when the memory was stored), the visible
        # ones newest first
        with self.db.reading() as c:
            rows = c.execute(
                "SELECT n.id FROM (SELECT DISTINCT ne.node_id, m.seq FROM node_entities ne"
                " JOIN nodes m ON m.id = ne.node_id WHERE ne.entity_id = ANY(%s)"
                " ORDER BY m.seq DESC LIMIT %s) last JOIN nodes n ON n.id = last.node_id"
                f" WHERE {where} ORDER BY n.event_time DESC, n.id LIMIT %s",
                [ids, NEWEST_LINKED, *params, limit],
            ).fetchall()
        return [r[0] for r in rows]

    def _entity_ranked(
        self, flt: NodeFilter, ids: list[str], match: str, limit: int
    ) -> list[tuple[str, float]]:
        where, params = filter_sql(flt, ph="%s")
        where += " AND EXISTS (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id"
        where += " AND ne.entity_id = ANY(%s))"
        try:
            return ranked_nodes(self.db, flt, match, where, [*params, ids], limit)
        except ValidationError:
            return []

    def _entity_neighbours(
        self, flt: NodeFilter, ids: list[str], max_links: int, limit: int
    ) -> list[tuple[str, str, str]]:
        where, params = filter_sql(flt, ph="%s")
        with self.db.reading() as c:
            # bounded counts: an entity stops being counted at max_links + 1 links
            specific = [
                r[0]
                for r in c.execute(
                    "SELECT l.entity_id FROM (SELECT DISTINCT entity_id FROM node_entities"
                    " WHERE node_id = ANY(%s)) l CROSS JOIN LATERAL (SELECT count(*) AS k FROM"
                    " (SELECT 1 FROM node_entities o WHERE o.entity_id = l.entity_id LIMIT %s) b)"
                    " cnt WHERE cnt.k <= %s ORDER BY l.entity_id",
                    (ids, max_links + 1, max_links),
                ).fetchall()
            ]
            if not specific:
                return []
            rows = c.execute(
                "SELECT other.node_id, mine.node_id, mine.entity_id FROM node_entities mine"
                " JOIN node_entities other ON other.entity_id = mine.entity_id"
                " JOIN nodes n ON n.id = other.node_id"
                " WHERE mine.node_id = ANY(%s) AND mine.entity_id = ANY(%s)"
                f" AND NOT (other.node_id = ANY(%s)) AND {where}"
                " ORDER BY mine.node_id, other.node_id LIMIT %s",
                [ids, specific, ids, *params, limit],
            ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def mention_texts(self, ids: Sequence[str]) -> list[tuple[str, str, str | None, str]]:
        """See :meth:`memloci.storage.base.Store.mention_texts`."""
        if not ids:
            return []
        with self.db.reading() as c:
            rows = c.execute(
                "SELECT id, namespace, CASE type WHEN 'semantic' THEN subject ELSE speaker END,"
                " content FROM nodes WHERE id = ANY(%s)"
                " AND type IN ('episodic', 'semantic') AND valid_until IS NULL ORDER BY seq",
                (list(ids),),
            ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]
