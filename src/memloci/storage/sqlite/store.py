"""SQLite backend (layer: storage): the default store, everything in one file.

Nodes, versions and edges; search primitives come from :mod:`memloci.storage.sqlite.search`,
users, threads, entities and API keys from :mod:`memloci.storage.sqlite.records`, plumbing
from :mod:`memloci.storage.sqlite.base`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from memloci.errors import NotFoundError, StorageError, ValidationError
from memloci.models import (
    NODE_ORDERS,
    Edge,
    MemoryNode,
    MemoryVersion,
    StoreStats,
    short_id,
    utcnow,
)
from memloci.storage.base import NodeFilter, NodePatch
from memloci.storage.rows import (
    NODE_COLUMNS,
    edge_from_row,
    node_from_row,
    node_to_row,
    version_from_row,
)
from memloci.storage.sql.chains import previous_turn
from memloci.storage.sql.inventory import SQLInventory
from memloci.storage.sqlfilter import filter_sql, ts
from memloci.storage.sqlite.base import IntegrityError, chunks, qs
from memloci.storage.sqlite.consolidation import SQLiteConsolidation
from memloci.storage.sqlite.doctor import SQLiteDoctor
from memloci.storage.sqlite.knowledge import SQLiteKnowledge
from memloci.storage.sqlite.paging import SQLitePaging
from memloci.storage.sqlite.privacy import SQLitePrivacy
from memloci.storage.sqlite.records import SQLiteRecords
from memloci.storage.sqlite.search import SQLiteSearch
from memloci.storage.sqlite.walks import SQLiteWalks
from memloci.storage.windows import SQLChain, edited, linked, restart, said, window

_SELECT_NODE = f"SELECT {', '.join('n.' + c for c in NODE_COLUMNS)} FROM nodes n"
_ORDERS = {
    "created": "n.created_at, n.rowid",
    "-created": "n.created_at DESC, n.rowid DESC",
    "event": "n.event_time, n.rowid",
    "-event": "n.event_time DESC, n.rowid DESC",
    "category": "n.category, n.created_at, n.rowid",
    "confidence": "n.confidence, n.rowid",
    "-confidence": "n.confidence DESC, n.created_at DESC, n.rowid DESC",
    "rowid": "n.rowid",
    "protected": "n.decay_rate > 0, n.updated_at DESC, n.id",
}
assert set(_ORDERS) == set(NODE_ORDERS)


class SQLiteStore(
    SQLitePaging,
    SQLiteRecords,
    SQLiteSearch,
    SQLiteConsolidation,
    SQLiteKnowledge,
    SQLiteWalks,
    SQLitePrivacy,
    SQLInventory,
    SQLiteDoctor,
):
    """The default store: everything in one SQLite file."""

    def _vector_bytes(self, value: object) -> bytes:
        return bytes(cast("bytes", value))

    supports_vectors = True

    # ------------------------------------------------------------------ nodes
    def id_exists(self, node_id: str) -> bool:
        with self._reading() as c:
            return c.execute("SELECT 1 FROM nodes WHERE id = ?", (node_id,)).fetchone() is not None

    def id_namespaces(
        self, ids: Sequence[str], *, edges: bool = False, entities: bool = False
    ) -> dict[str, str]:
        if not ids:
            return {}
        table = "edges" if edges else "entities" if entities else "nodes"
        with self._reading() as c:
            rows = c.execute(
                f"SELECT t.id, t.namespace FROM json_each(?) j CROSS JOIN {table} t"
                " ON t.id = j.value",
                (json.dumps(list(ids)),),
            ).fetchall()
        return {str(i): str(ns) for i, ns in rows}

    def _insert(self, c: Any, node: MemoryNode, context: str = "") -> MemoryNode:
        for _ in range(8):
            row = node_to_row(node, context)
            try:
                c.execute(
                    f"INSERT INTO nodes ({', '.join(row)}) VALUES ({qs(list(row))})",
                    list(row.values()),
                )
                break
            except IntegrityError as exc:
                if "nodes.id" not in str(exc):
                    raise StorageError(f"could not store memory: {exc}") from exc
                node = node.model_copy(update={"id": short_id()})
        else:  # pragma: no cover - 62^8 ids
            raise StorageError("could not allocate a unique memory id")
        c.execute(
            "INSERT OR REPLACE INTO versions (node_id, version, content, value, source_session,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (
                node.id,
                node.version,
                node.content,
                row["value"],
                node.session,
                ts(node.created_at),
            ),
        )
        return node

    def insert_node(self, node: MemoryNode, *, link_previous: bool = False) -> MemoryNode:
        with self._tx() as c:
            return self._insert_linked(c, node, link_previous)

    def _insert_linked(self, c: Any, node: MemoryNode, link_previous: bool) -> MemoryNode:
        """Insert ``node``; with ``link_previous``, as the next turn of its chain (see
        :mod:`memloci.storage.sql.chains`): a temporal edge from the turn before, and
        the neighbour windows of its full-text row (:mod:`memloci.storage.windows`)."""
        prev = previous_turn(c, self.dialect, node) if link_previous else None
        if prev is None:
            return self._insert(c, node, "")
        node = self._insert(c, node, window(said(prev[1], prev[2]), prev[3]))
        SQLChain(c, node.namespace).follow(prev[0], node.id, node.created_at.timestamp())
        return node

    def insert_nodes(self, nodes: Sequence[MemoryNode], *, link_previous: bool = False) -> None:
        with self._tx() as c:
            for node in nodes:
                self._insert_linked(c, node, link_previous)

    def get_node(self, namespace: str, node_id: str) -> MemoryNode | None:
        found = self.get_nodes(namespace, [node_id])
        return found[0] if found else None

    def get_nodes(self, namespace: str | Sequence[str], ids: Sequence[str]) -> list[MemoryNode]:
        if not ids:
            return []
        nss = [namespace] if isinstance(namespace, str) else list(namespace)
        out: dict[str, MemoryNode] = {}
        cols = ", ".join("n." + c for c in NODE_COLUMNS)
        with self._reading() as c:
            # CROSS JOIN: look ids up through the unique index, whatever the statistics say
            for row in c.execute(
                f"SELECT {cols} FROM json_each(?) j CROSS JOIN nodes n ON n.id = j.value"
                f" WHERE +n.namespace IN ({qs(nss)})",
                [json.dumps(list(ids)), *nss],
            ):
                node = node_from_row(row)
                out[node.id] = node
        return [out[i] for i in ids if i in out]

    def people_of(self, namespace: str | Sequence[str], ids: Sequence[str]) -> dict[str, str]:
        if not ids:
            return {}
        nss = [namespace] if isinstance(namespace, str) else list(namespace)
        with self._reading() as c:
            return dict(
                c.execute(
                    "SELECT n.id, coalesce(n.speaker, n.subject) FROM json_each(?) j"
                    " CROSS JOIN nodes n ON n.id = j.value WHERE +n.namespace IN"
                    f" ({qs(nss)}) AND coalesce(n.speaker, n.subject) IS NOT NULL",
                    [json.dumps(list(ids)), *nss],
                ).fetchall()
            )

    def list_nodes(
        self, flt: NodeFilter, *, limit: int = 50, offset: int = 0, order: str = "created"
    ) -> list[MemoryNode]:
        where, params = filter_sql(flt)
        order_sql = _ORDERS.get(order)
        if order_sql is None:
            raise ValidationError(
                f"unknown order {order!r}", hint=f"use one of {', '.join(NODE_ORDERS)}"
            )
        with self._reading() as c:
            rows = c.execute(
                f"{_SELECT_NODE} WHERE {where} ORDER BY {order_sql} LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def count_nodes(self, flt: NodeFilter) -> int:
        where, params = filter_sql(flt)
        with self._reading() as c:
            return int(
                c.execute(f"SELECT count(*) FROM nodes n WHERE {where}", params).fetchone()[0]
            )

    def iter_nodes(self, namespace: str) -> Iterator[MemoryNode]:
        last = 0
        while True:
            with self._reading() as c:
                rows = c.execute(
                    f"SELECT n.rowid, {', '.join('n.' + x for x in NODE_COLUMNS)} FROM nodes n"
                    " WHERE n.namespace = ? AND n.rowid > ? ORDER BY n.rowid LIMIT 500",
                    (namespace, last),
                ).fetchall()
            if not rows:
                return
            for r in rows:
                yield node_from_row(r[1:])
            last = rows[-1][0]

    def update_node(
        self, namespace: str, node_id: str, patch: NodePatch, *, session: str | None = None
    ) -> MemoryNode:
        with self._tx() as c:
            row = c.execute(
                f"SELECT n.rowid, {', '.join('n.' + x for x in NODE_COLUMNS)} FROM nodes n"
                " WHERE +n.namespace = ? AND n.id = ?",
                (namespace, node_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no memory {node_id!r} in namespace {namespace!r}")
            rowid, node = row[0], node_from_row(row[1:])
            changes: dict[str, Any] = dict(patch.extra)
            if patch.category is not None:
                changes["category"] = patch.category
            if patch.subject is not None:
                changes["subject"] = patch.subject
            if patch.metadata is not None:
                changes["metadata"] = patch.metadata
            if patch.confidence is not None:
                changes["confidence"] = patch.confidence
            if patch.decay_rate is not None:
                changes["decay_rate"] = patch.decay_rate
            if patch.times_confirmed_delta:
                changes["times_confirmed"] = node.times_confirmed + patch.times_confirmed_delta
            if patch.valid_until is not None:
                changes["valid_until"] = patch.valid_until
            if patch.set_value:
                changes["value"] = patch.value
            new_content = patch.content is not None and patch.content != node.content
            if new_content or patch.set_value:
                changes["version"] = node.version + 1
            if new_content:
                changes["content"] = patch.content
                changes["embedded"] = False
            changes.setdefault("updated_at", utcnow())
            updated = node.model_copy(update=changes)
            newrow = node_to_row(updated)
            if new_content:
                self._drop_vectors(c, [rowid])
            else:
                newrow.pop("embedded")
            newrow.pop("context")
            sets = ", ".join(f"{k} = ?" for k in newrow if k != "id")
            c.execute(
                f"UPDATE nodes SET {sets} WHERE rowid = ?",
                [v for k, v in newrow.items() if k != "id"] + [rowid],
            )
            if new_content and node.type.value == "episodic":
                edited(SQLChain(c, namespace), [node_id])
            if "version" in changes:
                c.execute(
                    "INSERT INTO versions (node_id, version, content, value, source_session,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        updated.id,
                        updated.version,
                        updated.content,
                        newrow["value"],
                        session,
                        ts(updated.updated_at),
                    ),
                )
            return updated

    def supersede(self, namespace: str, old_id: str, new: MemoryNode, *, now: datetime) -> None:
        with self._tx() as c:
            cur = c.execute(
                "UPDATE nodes SET valid_until = ?, updated_at = ?,"
                " times_contradicted = times_contradicted + 1"
                " WHERE +namespace = ? AND id = ? AND valid_until IS NULL",
                (ts(now), ts(now), namespace, old_id),
            )
            if cur.rowcount != 1:
                raise NotFoundError(f"no current memory {old_id!r} in namespace {namespace!r}")
            self._insert(c, new)
            c.execute(
                "INSERT INTO edges (id, namespace, source_id, target_id, relation, valid_from,"
                " created_at) VALUES (?, ?, ?, ?, 'supersedes', ?, ?)",
                (short_id() + short_id(), namespace, new.id, old_id, ts(now), ts(now)),
            )

    def _purge(self, c: Any, namespace: str, ids: Sequence[str]) -> int:
        self._scrub_pending = True  # close() merges the full-text index and the WAL away
        total = 0
        # the turns that stay next to removed ones hold their words in their windows
        stay = SQLChain(c, namespace).beside(ids)
        for chunk in chunks(list(ids), 400):
            rowids = [
                r[0]
                for r in c.execute(
                    f"SELECT rowid FROM nodes WHERE +namespace = ? AND id IN ({qs(chunk)})",
                    [namespace, *chunk],
                )
            ]
            if not rowids:
                continue
            self._drop_vectors(c, rowids)
            q = qs(chunk)
            c.execute(f"DELETE FROM versions WHERE node_id IN ({q})", chunk)
            self._unlink_entities(c, namespace, chunk)  # and entities no memory mentions
            c.execute(
                f"DELETE FROM edges WHERE namespace = ? AND (source_id IN ({q})"
                f" OR target_id IN ({q}))",
                [namespace, *chunk, *chunk],
            )
            total += c.execute(f"DELETE FROM nodes WHERE rowid IN ({qs(rowids)})", rowids).rowcount
        chain = SQLChain(c, namespace)
        for node_id, column in stay:
            restart(chain, node_id, column)
        return total

    def purge_node(self, namespace: str, node_id: str) -> bool:
        with self._tx() as c:
            return self._purge(c, namespace, [node_id]) > 0

    def clear(self, namespace: str, flt: NodeFilter | None = None) -> int:
        flt = flt or NodeFilter(namespaces=(namespace,), include_invalid=True)
        if tuple(flt.namespaces) != (namespace,):
            raise ValidationError("clear works on exactly one namespace")
        where, params = filter_sql(flt)
        with self._tx() as c:
            ids = [r[0] for r in c.execute(f"SELECT n.id FROM nodes n WHERE {where}", params)]
            return self._purge(c, namespace, ids)

    def versions(self, namespace: str, node_id: str) -> list[MemoryVersion]:
        with self._reading() as c:
            if (
                c.execute(
                    "SELECT 1 FROM nodes WHERE +namespace = ? AND id = ?", (namespace, node_id)
                ).fetchone()
                is None
            ):
                raise NotFoundError(f"no memory {node_id!r} in namespace {namespace!r}")
            rows = c.execute(
                "SELECT node_id, version, content, value, source_session, created_at"
                " FROM versions WHERE node_id = ? ORDER BY version",
                (node_id,),
            ).fetchall()
        return [version_from_row(r) for r in rows]

    def import_versions(self, versions: Sequence[MemoryVersion]) -> None:
        with self._tx() as c:
            c.executemany(
                "INSERT OR REPLACE INTO versions (node_id, version, content, value,"
                " source_session, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        v.node_id,
                        v.version,
                        v.content,
                        json.dumps(v.value),
                        v.source_session,
                        ts(v.created_at),
                    )
                    for v in versions
                ],
            )

    def find_by_hash(self, flt: NodeFilter, content_hash: str) -> list[MemoryNode]:
        where, params = filter_sql(flt)
        with self._reading() as c:
            rows = c.execute(
                f"{_SELECT_NODE} WHERE {where} AND n.content_hash = ? ORDER BY n.rowid LIMIT 5",
                [*params, content_hash],
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def prune_oldest(self, flt: NodeFilter, keep: int, *, now: datetime) -> int:
        if len(flt.namespaces) != 1:
            raise ValidationError("pruning works on exactly one namespace")
        where, params = filter_sql(flt)
        with self._tx() as c:
            ids = [
                r[0]
                for r in c.execute(
                    f"SELECT n.id FROM nodes n WHERE {where} ORDER BY (n.valid_until IS NULL"
                    " OR n.valid_until > ?) DESC, n.created_at DESC, n.rowid DESC"
                    " LIMIT -1 OFFSET ?",
                    [*params, ts(now), keep],
                )
            ]
            return self._purge(c, flt.namespaces[0], ids) if ids else 0

    def touch(self, namespace: str, ids: Sequence[str], *, now: datetime) -> None:
        if not ids:
            return
        with self._tx() as c:
            rows = c.execute(
                f"SELECT rowid, access_count, confidence FROM nodes WHERE +namespace = ?"
                f" AND id IN ({qs(list(ids))})",
                [namespace, *ids],
            ).fetchall()
            c.executemany(
                "UPDATE nodes SET access_count = ?, last_accessed = ?, confidence = ?"
                " WHERE rowid = ?",
                [
                    (n + 1, ts(now), min(1.0, conf + 0.05 * math.log1p((n + 1) / 20.0)), rowid)
                    for rowid, n, conf in rows
                ],
            )

    # ------------------------------------------------------------------ edges
    def insert_edge(self, edge: Edge) -> None:
        self.insert_edges([edge])

    def insert_edges(self, edges: Sequence[Edge]) -> None:
        with self._tx() as c:
            c.executemany(
                "INSERT OR REPLACE INTO edges (id, namespace, source_id, target_id, relation,"
                " predicate, weight, confidence, valid_from, valid_until, evidence, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        edge.id,
                        edge.namespace,
                        edge.source_id,
                        edge.target_id,
                        edge.relation.value,
                        edge.predicate,
                        edge.weight,
                        edge.confidence,
                        ts(edge.valid_from),
                        ts(edge.valid_until),
                        json.dumps(edge.evidence),
                        ts(edge.created_at),
                    )
                    for edge in edges
                ],
            )
            linked(c, edges)  # a temporal edge joins its turns' windows

    def edges(self, namespace: str, node_id: str, relation: str | None = None) -> list[Edge]:
        sql = (
            "SELECT id, namespace, source_id, target_id, relation, predicate, weight, confidence,"
            " valid_from, valid_until, evidence, created_at FROM edges"
            " WHERE namespace = ? AND (source_id = ? OR target_id = ?)"
        )
        params: list[Any] = [namespace, node_id, node_id]
        if relation is not None:
            sql += " AND relation = ?"
            params.append(relation)
        with self._reading() as c:
            rows = c.execute(sql + " ORDER BY created_at, id", params).fetchall()
        return [edge_from_row(r) for r in rows]

    def neighbours(self, namespace: str, ids: Sequence[str], relation: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {i: [] for i in ids}
        if not ids:
            return out
        q = qs(list(ids))
        with self._reading() as c:
            for src, dst in c.execute(
                f"SELECT source_id, target_id FROM edges WHERE namespace = ? AND relation = ?"
                f" AND (source_id IN ({q}) OR target_id IN ({q}))",
                [namespace, relation, *ids, *ids],
            ):
                if src in out:
                    out[src].append(dst)
                if dst in out:
                    out[dst].append(src)
        return out

    def iter_edges(self, namespace: str) -> Iterator[Edge]:
        with self._reading() as c:
            rows = c.execute(
                "SELECT id, namespace, source_id, target_id, relation, predicate, weight,"
                " confidence, valid_from, valid_until, evidence, created_at FROM edges"
                " WHERE namespace = ? ORDER BY created_at, id",
                (namespace,),
            ).fetchall()
        for r in rows:
            yield edge_from_row(r)

    def iter_versions(self, namespace: str) -> Iterator[MemoryVersion]:
        with self._reading() as c:
            rows = c.execute(
                "SELECT v.node_id, v.version, v.content, v.value, v.source_session, v.created_at"
                " FROM versions v JOIN nodes n ON n.id = v.node_id WHERE n.namespace = ?"
                " ORDER BY n.rowid, v.version",
                (namespace,),
            ).fetchall()
        for r in rows:
            yield version_from_row(r)

    # ------------------------------------------------------------------ housekeeping
    def namespaces(self) -> list[str]:
        with self._reading() as c:
            return [r[0] for r in c.execute("SELECT DISTINCT namespace FROM nodes ORDER BY 1")]

    def stats(self, namespaces: Sequence[str]) -> StoreStats:
        nss = list(namespaces)
        q = qs(nss)
        with self._reading() as c:
            by_type = dict(
                c.execute(
                    f"SELECT type, count(*) FROM nodes WHERE namespace IN ({q}) GROUP BY type", nss
                ).fetchall()
            )
            current = dict(
                c.execute(
                    f"SELECT type, count(*) FROM nodes WHERE namespace IN ({q})"
                    " AND valid_until IS NULL GROUP BY type",
                    nss,
                ).fetchall()
            )
            edges = dict(
                c.execute(
                    f"SELECT relation, count(*) FROM edges WHERE namespace IN ({q})"
                    " GROUP BY relation",
                    nss,
                ).fetchall()
            )
            entities = c.execute(
                f"SELECT count(*) FROM entities WHERE namespace IN ({q})", nss
            ).fetchone()[0]
            users = c.execute(
                f"SELECT count(*) FROM memory_users WHERE namespace IN ({q})", nss
            ).fetchone()[0]
            pending = c.execute(
                f"SELECT count(*) FROM nodes WHERE namespace IN ({q}) AND embedded = 0", nss
            ).fetchone()[0]
            orphans = c.execute(
                f"SELECT count(*) FROM nodes n WHERE n.namespace IN ({q})"
                " AND n.type IN ('semantic', 'opinion') AND n.valid_until IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.namespace = n.namespace"
                " AND e.source_id = n.id)"
                " AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.namespace = n.namespace"
                " AND e.target_id = n.id)"
                " AND NOT EXISTS (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id)",
                nss,
            ).fetchone()[0]
            pages = c.execute("PRAGMA page_count").fetchone()[0]
            page_size = c.execute("PRAGMA page_size").fetchone()[0]
        dim = self.get_meta("dimension")
        maintained = self.get_meta("last_maintenance")
        try:
            last_maintenance = datetime.fromisoformat(maintained) if maintained else None
        except ValueError:
            last_maintenance = None
        if last_maintenance is not None and last_maintenance.tzinfo is None:
            last_maintenance = last_maintenance.replace(tzinfo=UTC)
        return StoreStats(
            nodes_by_type=by_type,
            current_by_type=current,
            edges_by_type=edges,
            entities=int(entities),
            users=int(users),
            pending_embeddings=int(pending),
            size_bytes=int(pages) * int(page_size),
            embedding_model=self.get_meta("embedding_model"),
            dimension=int(dim) if dim else None,
            namespaces=[ns for ns in self.namespaces() if ns in nss],
            orphans=int(orphans),
            last_maintenance=last_maintenance,
            pending_sessions=self.count_pending_sessions(nss),
        )
