"""SQLite graph walks (layer: storage): edges by relation, entity neighbourhoods.

Every walk is bounded by a :class:`~memloci.storage.base.NodeFilter`: a node the
filter hides is neither returned nor walked through, so a walk can never reveal
(or route through) another user's, agent's or session's memories. Each step is one
indexed query (``edges_source`` / ``edges_target``, ``node_entities`` primary key,
``entity_names`` primary key).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

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
from memloci.storage.replies import replies, voice
from memloci.storage.rows import owner_match
from memloci.storage.sqlfilter import filter_sql
from memloci.storage.sqlite.base import OperationalError, SQLiteBase, chunks, qs
from memloci.storage.sqlite.records import _ENTITY_COLS, _entity_from_row
from memloci.storage.sqlite.search import FTS_WEIGHTS

TEMPORAL = EdgeType.TEMPORAL.value
_STEP = {
    # direction -> (column we come from, column we go to)
    "forward": ("source_id", "target_id"),
    "backward": ("target_id", "source_id"),
}


class SQLiteWalks(SQLiteBase):
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
        """Nodes reachable from ``seeds`` over current ``relation`` edges within ``depth``
        steps: ``(node_id, seed_id, distance, sign)`` with ``sign`` +1 when reached along
        edges (source → target), -1 against them. Breadth first: each node once, at its
        shortest distance (ties: the earlier seed, forward first); seeds are not returned.
        ``direction`` is ``forward``, ``backward`` or ``both``."""
        if not seeds or depth < 1 or not flt.namespaces:
            return []
        ways = ("forward", "backward") if direction == "both" else (direction,)
        where, params = filter_sql(flt)
        ns = list(flt.namespaces)
        seen: set[str] = set(seeds)
        # frontier: node id -> (seed, sign) it was reached from
        frontier: dict[str, tuple[str, int]] = {s: (s, 0) for s in dict.fromkeys(seeds)}
        out: list[tuple[str, str, int, int]] = []
        with self._reading() as c:
            for distance in range(1, depth + 1):
                found: dict[str, tuple[str, int]] = {}
                for way in ways:
                    here, there = _STEP[way]
                    sign = 1 if way == "forward" else -1
                    for chunk in chunks(list(frontier), 400):
                        rows = c.execute(
                            f"SELECT e.{here}, e.{there} FROM edges e"
                            f" CROSS JOIN nodes n ON n.id = e.{there}"
                            f" WHERE e.namespace IN ({qs(ns)}) AND e.{here} IN ({qs(chunk)})"
                            f" AND e.relation = ? AND e.valid_until IS NULL AND {where}",
                            [*ns, *chunk, relation, *params],
                        ).fetchall()
                        for src, dst in rows:
                            if dst in seen or dst in found:
                                continue
                            seed, prev = frontier[src]
                            if prev and prev != sign:
                                continue  # a chain keeps one direction
                            found[dst] = (seed, sign)
                # deterministic order: by seed order, then id
                order = {s: i for i, s in enumerate(seeds)}
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
        where, params = filter_sql(flt)
        ns = list(flt.namespaces)

        class Steps:
            def speakers(self, turns: Sequence[str]) -> dict[str, str | None]:
                # CROSS JOIN: look ids up through the unique index, whatever the statistics say
                rows = c.execute(
                    "SELECT n.id, n.speaker, n.content FROM json_each(?) j"
                    f" CROSS JOIN nodes n ON n.id = j.value WHERE {where}",
                    [json.dumps(list(turns)), *params],
                ).fetchall()
                return {node_id: voice(speaker, text) for node_id, speaker, text in rows}

            def step(
                self, turns: Sequence[str], *, forward: bool
            ) -> list[tuple[str, str, str | None]]:
                here, there = _STEP["forward" if forward else "backward"]
                out: list[tuple[str, str, str | None]] = []
                for chunk in chunks(list(turns), 400):
                    rows = c.execute(
                        f"SELECT e.{here}, e.{there}, n.speaker, n.content FROM edges e"
                        f" CROSS JOIN nodes n ON n.id = e.{there}"
                        f" WHERE e.namespace IN ({qs(ns)}) AND e.{here} IN ({qs(chunk)})"
                        f" AND e.relation = ? AND e.valid_until IS NULL AND {where}"
                        " ORDER BY e.rowid",
                        [*ns, *chunk, TEMPORAL, *params],
                    ).fetchall()
                    out += [(near, far, voice(who, text)) for near, far, who, text in rows]
                return out

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
        ns = list(namespaces)
        probes = given_probes(text)
        rows: list[Any] = []
        with self._reading() as c:
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
        return pick_named(rows, spans, _entity_from_row)

    def people_named(
        self, namespaces: Sequence[str], prefixes: Sequence[str], limit: int = 20
    ) -> list[Entity]:
        """See :meth:`memloci.storage.base.Store.people_named`."""
        bounds = beginnings(prefixes)
        if not bounds or not namespaces:
            return []
        ranges = " OR ".join(["(x.name_norm >= ? AND x.name_norm < ?)"] * len(bounds))
        with self._reading() as c:
            rows = c.execute(
                f"SELECT DISTINCT {_ENTITY_COLS} FROM entity_names x"
                " CROSS JOIN entities e ON e.id = x.entity_id"
                f" WHERE x.namespace IN ({qs(namespaces)}) AND ({ranges})"
                " AND e.type = 'person' ORDER BY e.mention_count DESC, e.id LIMIT ?",
                [*namespaces, *(b for pair in bounds for b in pair), limit],
            ).fetchall()
        return [_entity_from_row(r) for r in rows]

    def entity_fulltext(
        self, flt: NodeFilter, entity_ids: Sequence[str], match: str, limit: int
    ) -> list[tuple[str, float]]:
        """Nodes visible through ``flt`` linked to any of ``entity_ids``, ranked by the FTS5
        ``match`` (``-bm25``, higher is better); an empty ``match`` ranks newest first
        (score 0)."""
        if not entity_ids or not flt.namespaces:
            return []
        where, params = filter_sql(flt)
        ids = list(dict.fromkeys(entity_ids))
        linked = (
            "EXISTS (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id"
            f" AND ne.entity_id IN ({qs(ids)}))"
        )
        if not match.strip():
            # the last NEWEST_LINKED links (a backward walk of the entity index), the
            # visible ones newest first: bounded work however many memories name it
            with self._reading() as c:
                rows = c.execute(
                    "SELECT DISTINCT n.id, n.event_time FROM (SELECT node_id FROM node_entities"
                    f" WHERE entity_id IN ({qs(ids)}) ORDER BY rowid DESC LIMIT ?) ne"
                    f" CROSS JOIN nodes n ON n.id = ne.node_id WHERE {where}"
                    " ORDER BY n.event_time DESC, n.id LIMIT ?",
                    [*ids, NEWEST_LINKED, *params, limit],
                ).fetchall()
            return [(r[0], 0.0) for r in rows]
        weights = ", ".join(str(w) for w in FTS_WEIGHTS)
        match = f"({match}) AND {owner_match(flt.namespaces, flt.user)}"
        sql = (
            f"SELECT n.id, bm25(nodes_fts, {weights}) AS r FROM nodes_fts"
            " CROSS JOIN nodes n ON n.rowid = nodes_fts.rowid"
            f" WHERE nodes_fts MATCH ? AND {where} AND {linked} ORDER BY r LIMIT ?"
        )
        try:
            with self._reading() as c:
                rows = c.execute(sql, [match, *params, *ids, limit]).fetchall()
        except OperationalError:
            return []
        return [(r[0], -float(r[1])) for r in rows]

    def entity_neighbours(
        self, flt: NodeFilter, node_ids: Sequence[str], *, max_links: int, limit: int = 200
    ) -> list[tuple[str, str, str]]:
        """Other nodes (visible through ``flt``) sharing an entity with ``node_ids``:
        ``(node_id, via node_id, entity_id)``. Entities linked to more than ``max_links``
        nodes are skipped: they connect too much to say anything."""
        if not node_ids or not flt.namespaces:
            return []
        where, params = filter_sql(flt)
        ids = list(dict.fromkeys(node_ids))
        with self._reading() as c:
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
        with self._reading() as c:
            for chunk in chunks(list(ids), 400):
                out += c.execute(
                    "SELECT id, namespace, CASE type WHEN 'semantic' THEN subject"
                    f" ELSE speaker END, content FROM nodes WHERE id IN ({qs(chunk)})"
                    " AND type IN ('episodic', 'semantic') AND valid_until IS NULL"
                    " ORDER BY rowid",
                    chunk,
                ).fetchall()
        return out
