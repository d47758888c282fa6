"""PostgreSQL graph walks (layer: storage): edges by relation, entity neighbourhoods.

Every walk is bounded by a :class:`~memloci.storage.base.NodeFilter`: a node the filter
hides is neither returned nor walked through. Same semantics and ordering as the SQLite
walks; each step is one indexed query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memloci.errors import ValidationError
from memloci.models import EdgeType, Entity
from memloci.storage.base import NEWEST_LINKED, NodeFilter
from memloci.storage.names import (
    MAX_PROBES,
    beginnings,
    given_probes,
    given_rows,
    grams,
    pick_named,
    prefix_bounds,
)
from memloci.storage.postgres.base import PostgresBase
from memloci.storage.postgres.ranking import ranked
from memloci.storage.postgres.records import ENTITY_COLS, entity_from_row
from memloci.storage.postgres.search import NODE_WEIGHTS, namespace_scope, owner_conditions
from memloci.storage.postgres.tsquery import is_disjunction, to_tsquery_sql
from memloci.storage.replies import replies, voice
from memloci.storage.sqlfilter import filter_sql

TEMPORAL = EdgeType.TEMPORAL.value
_STEP = {
    # direction -> (column we come from, column we go to)
    "forward": ("source_id", "target_id"),
    "backward": ("target_id", "source_id"),
}


class PostgresWalks(PostgresBase):
    """Graph walk queries for the retrieval pipeline's graph strategies."""

    def walk(
        self,
        flt: NodeFilter,
        seeds: Sequence[str],
        relation: str,
        *,
        depth: int = 1,
        direction: str = "both",
        limit: int = 200,
    ) -> list[tuple[str, str, int, int]]:
        """See :meth:`memloci.storage.base.Store.walk`."""
        if not seeds or depth < 1 or not flt.namespaces:
            return []
        ways = ("forward", "backward") if direction == "both" else (direction,)
        where, params = filter_sql(flt, ph="%s")
        ns = list(flt.namespaces)
        seen: set[str] = set(seeds)
        frontier: dict[str, tuple[str, int]] = {s: (s, 0) for s in dict.fromkeys(seeds)}
        order = {s: i for i, s in enumerate(seeds)}
        out: list[tuple[str, str, int, int]] = []
        with self._reading() as c:
            for distance in range(1, depth + 1):
                found: dict[str, tuple[str, int]] = {}
                for way in ways:
                    here, there = _STEP[way]
                    sign = 1 if way == "forward" else -1
                    rows = c.execute(
                        f"SELECT e.{here}, e.{there} FROM edges e JOIN nodes n ON n.id = e.{there}"
                        f" WHERE e.namespace = ANY(%s) AND e.{here} = ANY(%s)"
                        f" AND e.relation = %s AND e.valid_until IS NULL AND {where}"
                        " ORDER BY e.seq",
                        [ns, list(frontier), relation, *params],
                    ).fetchall()
                    for src, dst in rows:
                        if dst in seen or dst in found:
                            continue
                        seed, prev = frontier[src]
                        if prev and prev != sign:
                            continue  # a chain keeps one direction
                        found[dst] = (seed, sign)
                for node_id, (seed, sign) in sorted(
                    found.items(), key=lambda kv: (order.get(kv[1][0], 0), kv[1][1] < 0, kv[0])
                ):
                    out.append((node_id, seed, distance, sign))
                    if len(out) >= limit:
                        return out
                seen.update(found)
                frontier = found
                if not frontier:
                    break
        return out

    def replies(self, flt: NodeFilter, ids: Sequence[str], *, reach: int) -> dict[str, str | None]:
        """See :meth:`memloci.storage.base.Store.replies`."""
        if not ids or not flt.namespaces:
            return {}
        where, params = filter_sql(flt, ph="%s")
        ns = list(flt.namespaces)

        class Steps:
            def speakers(self, turns: Sequence[str]) -> dict[str, str | None]:
                rows = c.execute(
                    f"SELECT n.id, n.speaker, n.content FROM nodes n"
                    f" WHERE n.id = ANY(%s) AND {where}",
                    [list(turns), *params],
                ).fetchall()
                return {r[0]: voice(r[1], r[2]) for r in rows}

            def step(
                self, turns: Sequence[str], *, forward: bool
            ) -> list[tuple[str, str, str | None]]:
                here, there = _STEP["forward" if forward else "backward"]
                rows = c.execute(
                    f"SELECT e.{here}, e.{there}, n.speaker, n.content FROM edges e"
                    f" JOIN nodes n ON n.id = e.{there}"
                    f" WHERE e.namespace = ANY(%s) AND e.{here} = ANY(%s)"
                    f" AND e.relation = %s AND e.valid_until IS NULL AND {where}"
                    " ORDER BY e.seq",
                    [ns, list(turns), TEMPORAL, *params],
                ).fetchall()
                return [(r[0], r[1], voice(r[2], r[3])) for r in rows]

        with self._reading() as c:
            return replies(Steps(), ids, reach)

    def entities_in_text(
        self, namespaces: Sequence[str], text: str, *, max_words: int = 4
    ) -> list[tuple[str, Entity]]:
        """See :meth:`memloci.storage.base.Store.entities_in_text` (and
        :mod:`memloci.storage.names`)."""
        spans = grams(text, max_words)
        if not spans or not namespaces:
            return []
        probes = given_probes(text)
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
        with self._reading() as c:
            found = c.execute(f"{sql} ORDER BY mention_count DESC, id", params).fetchall()
        rows = [r[1:] for r in found if not r[0]]
        rows += given_rows([r[1:] for r in found if r[0]], probes)
        return pick_named(rows, spans, entity_from_row)

    def people_named(
        self, namespaces: Sequence[str], prefixes: Sequence[str], limit: int = 20
    ) -> list[Entity]:
        """See :meth:`memloci.storage.base.Store.people_named`."""
        bounds = beginnings(prefixes)
        if not bounds or not namespaces:
            return []
        # ~>=~ / ~<~ compare bytewise, as the entity_names_prefix index does
        ranges = " OR ".join(["(x.name_norm ~>=~ %s AND x.name_norm ~<~ %s)"] * len(bounds))
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {ENTITY_COLS} FROM entities e WHERE e.type = 'person' AND e.id IN"
                " (SELECT x.entity_id FROM entity_names x"
                f" WHERE x.namespace = ANY(%s) AND ({ranges}))"
                " ORDER BY e.mention_count DESC, e.id LIMIT %s",
                [list(namespaces), *(b for pair in bounds for b in pair), limit],
            ).fetchall()
        return [entity_from_row(r) for r in rows]

    def entity_fulltext(
        self, flt: NodeFilter, entity_ids: Sequence[str], match: str, limit: int
    ) -> list[tuple[str, float]]:
        """Nodes visible through ``flt`` linked to any of ``entity_ids``, ranked by the
        match (BM25 on the FTS5 scale, higher is better); an empty match ranks newest first
        (score 0); a match that does not parse finds nothing."""
        if not entity_ids or not flt.namespaces:
            return []
        where, params = filter_sql(flt, ph="%s")
        ids = list(dict.fromkeys(entity_ids))
        if not match.strip():
            # the last NEWEST_LINKED links (by when the memory was stored), the visible
            # ones newest first
            with self._reading() as c:
                rows = c.execute(
                    "SELECT n.id FROM (SELECT DISTINCT ne.node_id, m.seq FROM node_entities ne"
                    " JOIN nodes m ON m.id = ne.node_id WHERE ne.entity_id = ANY(%s)"
                    " ORDER BY m.seq DESC LIMIT %s) last JOIN nodes n ON n.id = last.node_id"
                    f" WHERE {where} ORDER BY n.event_time DESC, n.id LIMIT %s",
                    [ids, NEWEST_LINKED, *params, limit],
                ).fetchall()
            return [(r[0], 0.0) for r in rows]
        try:
            tsq, tparams = to_tsquery_sql(match)
        except ValidationError:
            return []
        where += " AND EXISTS (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id"
        where += " AND ne.entity_id = ANY(%s))"
        with self._reading() as c:
            found = ranked(
                c,
                self._terms,
                table="nodes",
                key="id",
                tsq=tsq,
                tparams=tparams,
                texts=tparams,
                whole_needed=not is_disjunction(match),
                where=where,
                params=[*params, ids],
                limit=limit,
                weights=NODE_WEIGHTS,
                owners=owner_conditions(flt),
                scope=namespace_scope(flt),
            )
        return [(str(i), s) for i, s in found]

    def entity_neighbours(
        self, flt: NodeFilter, node_ids: Sequence[str], *, max_links: int, limit: int = 200
    ) -> list[tuple[str, str, str]]:
        """See :meth:`memloci.storage.base.Store.entity_neighbours`."""
        if not node_ids or not flt.namespaces:
            return []
        where, params = filter_sql(flt, ph="%s")
        ids = list(dict.fromkeys(node_ids))
        with self._reading() as c:
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
        with self._reading() as c:
            rows = c.execute(
                "SELECT id, namespace, CASE type WHEN 'semantic' THEN subject ELSE speaker END,"
                " content FROM nodes WHERE id = ANY(%s)"
                " AND type IN ('episodic', 'semantic') AND valid_until IS NULL ORDER BY seq",
                (list(ids),),
            ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]
