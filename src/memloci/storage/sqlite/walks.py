"""SQLite graph walks (layer: storage): edges by relation, entity neighbourhoods.

Every walk is bounded by a :class:`~memloci.storage.base.NodeFilter`: a node the
filter hides is neither returned nor walked through, so a walk can never reveal
(or route through) another user's, agent's or session's memories. Each step is one
indexed query (``edges_source`` / ``edges_target``, ``node_entities`` primary key,
``entity_names`` primary key).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memloci.storage.base import NEWEST_LINKED, NodeFilter
from memloci.storage.names import (
    MAX_PROBES,
    given_rows,
    prefix_bounds,
)
from memloci.storage.rows import owner_match
from memloci.storage.sql.walks import SQLWalks
from memloci.storage.sqlfilter import filter_sql
from memloci.storage.sqlite.base import OperationalError, SQLiteDatabase, chunks, qs
from memloci.storage.sqlite.records import _ENTITY_COLS
from memloci.storage.sqlite.search import FTS_WEIGHTS


class SQLiteWalks(SQLWalks[SQLiteDatabase]):
    """Graph walk queries for the retrieval pipeline's graph strategies."""

    people_sql = (
        "SELECT DISTINCT {cols} FROM entity_names x CROSS JOIN entities e ON e.id = x.entity_id"
        " WHERE {ns} AND ({ranges}) AND e.type = 'person'"
        " ORDER BY e.mention_count DESC, e.id LIMIT ?"
    )

    def _named_rows(self, namespaces: Sequence[str], spans: list[str], probes: Any) -> list[Any]:
        ns = list(namespaces)
        rows: list[Any] = []
        with self.db.reading() as c:
            for chunk in chunks(list(spans), 400):
                rows += c.execute(
                    f"SELECT x.name_norm, {_ENTITY_COLS} FROM entity_names x"
                    " CROSS JOIN entities e ON e.id = x.entity_id"
                    f" WHERE x.namespace IN ({qs(ns)}) AND x.name_norm IN ({qs(chunk)})"
                    " ORDER BY e.mention_count DESC, e.id",
                    [*ns, *chunk],
                ).fetchall()
            bounds = prefix_bounds(list(probes)[:MAX_PROBES])
            if bounds:  # people by their given name: "Caroline" → "Caroline Okafor"
                ranges = " OR ".join(["(x.name_norm > ? AND x.name_norm < ?)"] * len(bounds))
                found = c.execute(
                    f"SELECT x.name_norm, {_ENTITY_COLS} FROM entity_names x"
                    " CROSS JOIN entities e ON e.id = x.entity_id"
                    f" WHERE x.namespace IN ({qs(ns)}) AND ({ranges}) AND e.type = 'person'"
                    " ORDER BY e.mention_count DESC, e.id",
                    [*ns, *(b for pair in bounds for b in pair)],
                ).fetchall()
                rows += given_rows(found, probes)
        return rows

    def _newest_linked(self, flt: NodeFilter, ids: list[str], limit: int) -> list[str]:
        where, params = filter_sql(flt)
        # the last NEWEST_LINKED links (a backward walk of the entity index), the
        # visible ones newest first: bounded work however many memories name it
        with self.db.reading() as c:
            rows = c.execute(
                "SELECT DISTINCT n.id, n.event_time FROM (SELECT node_id FROM node_entities"
                f" WHERE entity_id IN ({qs(ids)}) ORDER BY rowid DESC LIMIT ?) ne"
                f" CROSS JOIN nodes n ON n.id = ne.node_id WHERE {where}"
                " ORDER BY n.event_time DESC, n.id LIMIT ?",
                [*ids, NEWEST_LINKED, *params, limit],
            ).fetchall()
        return [r[0] for r in rows]

    def _entity_ranked(
        self, flt: NodeFilter, ids: list[str], match: str, limit: int
    ) -> list[tuple[str, float]]:
        where, params = filter_sql(flt)
        linked = (
            "EXISTS (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id"
            f" AND ne.entity_id IN ({qs(ids)}))"
        )
        weights = ", ".join(str(w) for w in FTS_WEIGHTS)
        match = f"({match}) AND {owner_match(flt.namespaces, flt.user)}"
        sql = (
            f"SELECT n.id, bm25(nodes_fts, {weights}) AS r FROM nodes_fts"
            " CROSS JOIN nodes n ON n.rowid = nodes_fts.rowid"
            f" WHERE nodes_fts MATCH ? AND {where} AND {linked} ORDER BY r LIMIT ?"
        )
        try:
            with self.db.reading() as c:
                rows = c.execute(sql, [match, *params, *ids, limit]).fetchall()
        except OperationalError:
            return []
        return [(r[0], -float(r[1])) for r in rows]

    def _entity_neighbours(
        self, flt: NodeFilter, ids: list[str], max_links: int, limit: int
    ) -> list[tuple[str, str, str]]:
        where, params = filter_sql(flt)
        with self.db.reading() as c:
            linked = [
                r[0]
                for r in c.execute(
                    "SELECT DISTINCT entity_id FROM node_entities"
                    f" WHERE node_id IN ({qs(ids)}) ORDER BY entity_id",
                    ids,
                )
            ]
            # bounded counts: an entity stops being counted at max_links + 1 links
            specific = [
                e
                for e in linked
                if c.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM node_entities WHERE entity_id = ?"
                    " LIMIT ?)",
                    (e, max_links + 1),
                ).fetchone()[0]
                <= max_links
            ]
            if not specific:
                return []
            rows = c.execute(
                "SELECT other.node_id, mine.node_id, mine.entity_id FROM node_entities mine"
                " CROSS JOIN node_entities other ON other.entity_id = mine.entity_id"
                " CROSS JOIN nodes n ON n.id = other.node_id"
                f" WHERE mine.node_id IN ({qs(ids)}) AND mine.entity_id IN ({qs(specific)})"
                f" AND other.node_id NOT IN ({qs(ids)}) AND {where}"
                " ORDER BY mine.node_id, other.node_id LIMIT ?",
                [*ids, *specific, *ids, *params, limit],
            ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def mention_texts(self, ids: Sequence[str]) -> list[tuple[str, str, str | None, str]]:
        """See :meth:`memloci.storage.base.Store.mention_texts`."""
        out: list[tuple[str, str, str | None, str]] = []
        with self.db.reading() as c:
            for chunk in chunks(list(ids), 400):
                out += c.execute(
                    "SELECT id, namespace, CASE type WHEN 'semantic' THEN subject"
                    f" ELSE speaker END, content FROM nodes WHERE id IN ({qs(chunk)})"
                    " AND type IN ('episodic', 'semantic') AND valid_until IS NULL"
                    " ORDER BY rowid",
                    chunk,
                ).fetchall()
        return out
