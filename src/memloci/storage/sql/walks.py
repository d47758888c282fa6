"""Graph walks (layer: storage): memories reached over edges, and the replies next to
turns.

Every walk is bounded by a :class:`~memloci.storage.base.NodeFilter`: a node the filter
hides is neither returned nor walked through, so a walk can never reveal (or route
through) another user's, agent's or session's memories. Each step is one indexed query
per part of the frontier. Finding entities named in a text and ranking an entity's
memories stay with each backend (their name indexes and full text differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from memloci.models import EdgeType, Entity
from memloci.storage.base import NodeFilter
from memloci.storage.names import beginnings, given_probes, grams, pick_named
from memloci.storage.replies import replies, voice
from memloci.storage.sql.core import DB, SQLSlice
from memloci.storage.sql.records import entity_from_row
from memloci.storage.sqlfilter import filter_sql

TEMPORAL = EdgeType.TEMPORAL.value
STEP = {
    # direction -> (column we come from, column we go to)
    "forward": ("source_id", "target_id"),
    "backward": ("target_id", "source_id"),
}


class SQLWalks(SQLSlice[DB]):
    """Graph walk queries for the retrieval pipeline's graph strategies."""

    walk_order: ClassVar[str] = ""  # the order a step reads its edges in

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
        """Nodes reachable from ``seeds`` over current ``relation`` edges within ``depth``
        steps: ``(node_id, seed_id, distance, sign)`` with ``sign`` +1 when reached along
        edges (source → target), -1 against them. Breadth first: each node once, at its
        shortest distance (ties: the earlier seed, forward first); seeds are not returned.
        ``direction`` is ``forward``, ``backward`` or ``both``."""
        d = self.db.dialect
        if not seeds or depth < 1 or not flt.namespaces:
            return []
        ways = ("forward", "backward") if direction == "both" else (direction,)
        where, params = filter_sql(flt)
        in_ns, ns_params = d.any("e.namespace", flt.namespaces)
        seen: set[str] = set(seeds)
        # frontier: node id -> (seed, sign) it was reached from
        frontier: dict[str, tuple[str, int]] = {s: (s, 0) for s in dict.fromkeys(seeds)}
        order = {s: i for i, s in enumerate(seeds)}
        out: list[tuple[str, str, int, int]] = []
        with self.db.reading() as c:
            for distance in range(1, depth + 1):
                found: dict[str, tuple[str, int]] = {}
                for way in ways:
                    here, there = STEP[way]
                    sign = 1 if way == "forward" else -1
                    for chunk in d.chunks(list(frontier)):
                        near, near_params = d.any(f"e.{here}", chunk)
                        rows = c.execute(
                            d.q(
                                f"SELECT e.{here}, e.{there} FROM edges e"
                                f" {d.join_first} nodes n ON n.id = e.{there}"
                                f" WHERE {in_ns} AND {near}"
                                f" AND e.relation = ? AND e.valid_until IS NULL AND {where}"
                                f"{self.walk_order}"
                            ),
                            [*ns_params, *near_params, relation, *params],
                        ).fetchall()
                        for src, dst in rows:
                            if dst in seen or dst in found:
                                continue
                            seed, prev = frontier[src]
                            if prev and prev != sign:
                                continue  # a chain keeps one direction
                            found[dst] = (seed, sign)
                # deterministic order: by seed order, then id
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
        d = self.db.dialect
        if not ids or not flt.namespaces:
            return {}
        where, params = filter_sql(flt)
        in_ns, ns_params = d.any("e.namespace", flt.namespaces)

        class Steps:
            def speakers(self, turns: Sequence[str]) -> dict[str, str | None]:
                nodes, ids_params = d.by_ids("n", turns)
                rows = c.execute(
                    d.q(f"SELECT n.id, n.speaker, n.content FROM {nodes} {where}"),
                    [*ids_params, *params],
                ).fetchall()
                return {node_id: voice(speaker, text) for node_id, speaker, text in rows}

            def step(
                self, turns: Sequence[str], *, forward: bool
            ) -> list[tuple[str, str, str | None]]:
                here, there = STEP["forward" if forward else "backward"]
                out: list[tuple[str, str, str | None]] = []
                for chunk in d.chunks(turns):
                    known, known_params = d.any(f"e.{here}", chunk)
                    rows = c.execute(
                        d.q(
                            f"SELECT e.{here}, e.{there}, n.speaker, n.content FROM edges e"
                            f" {d.join_first} nodes n ON n.id = e.{there}"
                            f" WHERE {in_ns} AND {known}"
                            f" AND e.relation = ? AND e.valid_until IS NULL AND {where}"
                            f" ORDER BY e.{d.rowid}"
                        ),
                        [*ns_params, *known_params, TEMPORAL, *params],
                    ).fetchall()
                    out += [(near, far, voice(who, text)) for near, far, who, text in rows]
                return out

        with self.db.reading() as c:
            return replies(Steps(), ids, reach)

    def people_named(
        self, namespaces: Sequence[str], prefixes: Sequence[str], limit: int = 20
    ) -> list[Entity]:
        """See :meth:`memloci.storage.base.Store.people_named`."""
        bounds = beginnings(prefixes)
        if not bounds or not namespaces:
            return []
        return self._people_named(namespaces, bounds, limit)

    def entities_in_text(
        self, namespaces: Sequence[str], text: str, *, max_words: int = 4
    ) -> list[tuple[str, Entity]]:
        """See :meth:`memloci.storage.base.Store.entities_in_text` (and
        :mod:`memloci.storage.names`)."""
        spans = grams(text, max_words)
        if not spans or not namespaces:
            return []
        rows = self._named_rows(namespaces, list(spans), given_probes(text))
        return pick_named(rows, spans, entity_from_row)

    def _named_rows(self, namespaces: Sequence[str], spans: list[str], probes: Any) -> list[Any]:
        """``(name_norm, *entity columns)`` of the entities named by one of ``spans``,
        then of the people a given-name ``probes`` begins (:func:`given_rows`)."""
        raise NotImplementedError

    # people with a name in the ranges, most mentioned first: ``{cols}`` the entity
    # columns, ``{ns}`` the namespace test and ``{ranges}`` the names' ranges
    people_sql: ClassVar[str]

    def _people_named(
        self, namespaces: Sequence[str], bounds: list[tuple[str, str]], limit: int
    ) -> list[Entity]:
        """People with a name in one of ``bounds`` (``[low, high)``, bytewise)."""
        d = self.db.dialect
        ranges = " OR ".join([d.bytes_range("x.name_norm")] * len(bounds))
        in_ns, ns_params = d.any("x.namespace", namespaces)
        sql = self.people_sql.format(cols=self.db.cols.entity, ns=in_ns, ranges=ranges)
        with self.db.reading() as c:
            rows = c.execute(
                d.q(sql), [*ns_params, *(b for pair in bounds for b in pair), limit]
            ).fetchall()
        return [entity_from_row(r) for r in rows]

    def entity_fulltext(
        self, flt: NodeFilter, entity_ids: Sequence[str], match: str, limit: int
    ) -> list[tuple[str, float]]:
        """Nodes visible through ``flt`` linked to any of ``entity_ids``, ranked by the
        match (BM25 on the FTS5 scale, higher is better); an empty match ranks the newest
        linked first (score 0); a match that does not parse finds nothing."""
        if not entity_ids or not flt.namespaces:
            return []
        ids = list(dict.fromkeys(entity_ids))
        if not match.strip():
            return [(node_id, 0.0) for node_id in self._newest_linked(flt, ids, limit)]
        return self._entity_ranked(flt, ids, match, limit)

    def _newest_linked(self, flt: NodeFilter, ids: list[str], limit: int) -> list[str]:
        """Among the last NEWEST_LINKED links of ``ids``, the memories ``flt`` shows,
        newest first: bounded work however many memories name them."""
        raise NotImplementedError

    def _entity_ranked(
        self, flt: NodeFilter, ids: list[str], match: str, limit: int
    ) -> list[tuple[str, float]]:
        raise NotImplementedError

    def entity_neighbours(
        self, flt: NodeFilter, node_ids: Sequence[str], *, max_links: int, limit: int = 200
    ) -> list[tuple[str, str, str]]:
        """Other nodes (visible through ``flt``) sharing an entity with ``node_ids``:
        ``(node_id, via node_id, entity_id)``. Entities linked to more than ``max_links``
        nodes are skipped: they connect too much to say anything."""
        if not node_ids or not flt.namespaces:
            return []
        return self._entity_neighbours(flt, list(dict.fromkeys(node_ids)), max_links, limit)

    def _entity_neighbours(
        self, flt: NodeFilter, ids: list[str], max_links: int, limit: int
    ) -> list[tuple[str, str, str]]:
        raise NotImplementedError
