"""PostgreSQL backend (layer: storage): many servers, one database.

Nodes, versions and edges; search primitives come from
:mod:`memloci.storage.postgres.search`, users, threads, entities and API keys from
:mod:`memloci.storage.postgres.records`, plumbing from :mod:`memloci.storage.postgres.base`.
The module split and the SQL mirror the SQLite backend, so both pass one contract suite.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

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
from memloci.storage.base import Health, NodeFilter, NodePatch
from memloci.storage.postgres.base import chunks
from memloci.storage.postgres.chains import deleting, lock_chain, previous_turn
from memloci.storage.postgres.consolidation import PostgresConsolidation
from memloci.storage.postgres.inventory import PostgresInventory
from memloci.storage.postgres.knowledge import PostgresKnowledge
from memloci.storage.postgres.paging import PostgresPaging
from memloci.storage.postgres.privacy import PostgresPrivacy
from memloci.storage.postgres.records import NODE_COLS, PostgresRecords
from memloci.storage.postgres.search import PostgresSearch
from memloci.storage.postgres.walks import PostgresWalks
from memloci.storage.rows import edge_from_row, node_from_row, node_to_row, version_from_row
from memloci.storage.sqlfilter import filter_sql, ts
from memloci.storage.windows import SQLChain, edited, linked, restart, said, window

_SELECT_NODE = f"SELECT {NODE_COLS} FROM nodes n"
BULK = 1000  # rows per pipelined batch of a bulk insert
_ORDERS = {
    "created": "n.created_at, n.seq",
    "-created": "n.created_at DESC, n.seq DESC",
    "event": "n.event_time, n.seq",
    "-event": "n.event_time DESC, n.seq DESC",
    "category": "n.category, n.created_at, n.seq",
    "confidence": "n.confidence, n.seq",
    "-confidence": "n.confidence DESC, n.created_at DESC, n.seq DESC",
    "rowid": "n.seq",
    "protected": 'n.decay_rate > 0, n.updated_at DESC, n.id COLLATE "C"',
}
assert set(_ORDERS) == set(NODE_ORDERS)
_JSON_COLS = {"value", "metadata", "details"}
_EDGE_COLS = (
    "id, namespace, source_id, target_id, relation, predicate, weight, confidence,"
    " valid_from, valid_until, evidence::text, created_at"
)
_VERSION_INSERT = (
    "INSERT INTO versions (node_id, version, content, value, source_session, created_at)"
    " VALUES (%s, %s, %s, %s::jsonb, %s, %s)"
)


def _placeholders(row: dict[str, Any]) -> str:
    return ", ".join("%s::jsonb" if k in _JSON_COLS else "%s" for k in row)


class PostgresStore(
    PostgresPaging,
    PostgresRecords,
    PostgresSearch,
    PostgresConsolidation,
    PostgresKnowledge,
    PostgresWalks,
    PostgresInventory,
    PostgresPrivacy,
):
    """memloci on PostgreSQL + pgvector: ``PostgresStore("postgresql://user:pw@host/db")``.

    ``schema`` (or a ``?schema=`` URL parameter) keeps the tables in their own schema;
    ``pool_size`` bounds the connections this process opens.
    """

    supports_vectors = True

    def doctor(self, *, repair: bool = False) -> Health:
        """See :meth:`memloci.storage.base.Store.doctor`. PostgreSQL types its vectors
        (pgvector, one dimension) and JSON (jsonb): no row can hold what a SQLite reader
        skips, and its full-text vectors are columns of the rows. Only the connection
        is checked; the server's own tools (``amcheck``, ``pg_dump``) check its pages.
        The notes also carry the advice of the settings check made on open."""
        with self._reading() as c:
            c.execute("SELECT 1").fetchone()
        return Health(
            backend="postgres",
            repaired=repair,
            notes=[
                "PostgreSQL types vectors and JSON: no damaged rows to look for",
                *self.server_advice,
            ],
        )

    # ------------------------------------------------------------------ nodes
    def id_exists(self, node_id: str) -> bool:
        with self._reading() as c:
            return c.execute("SELECT 1 FROM nodes WHERE id = %s", (node_id,)).fetchone() is not None

    def id_namespaces(
        self, ids: Sequence[str], *, edges: bool = False, entities: bool = False
    ) -> dict[str, str]:
        if not ids:
            return {}
        table = "edges" if edges else "entities" if entities else "nodes"
        with self._reading() as c:
            rows = c.execute(
                f"SELECT id, namespace FROM {table} WHERE id = ANY(%s)", (list(ids),)
            ).fetchall()
        return {str(i): str(ns) for i, ns in rows}

    def _insert(self, c: Any, node: MemoryNode, context: str = "") -> MemoryNode:
        for _ in range(8):
            row = node_to_row(node, context)
            inserted = c.execute(
                f"INSERT INTO nodes ({', '.join(row)}) VALUES ({_placeholders(row)})"
                " ON CONFLICT (id) DO NOTHING RETURNING seq",
                list(row.values()),
            ).fetchone()
            if inserted is not None:
                break
            node = node.model_copy(update={"id": short_id()})
        else:  # pragma: no cover - 62^8 ids
            raise StorageError("could not allocate a unique memory id")
        c.execute(
            _VERSION_INSERT + " ON CONFLICT (node_id, version) DO UPDATE SET"
            " content = excluded.content, value = excluded.value,"
            " source_session = excluded.source_session, created_at = excluded.created_at",
            (node.id, node.version, node.content, row["value"], node.session, ts(node.created_at)),
        )
        return node

    def insert_node(self, node: MemoryNode, *, link_previous: bool = False) -> MemoryNode:
        return self._retrying(lambda c: self._insert_linked(c, node, link_previous))

    def _insert_linked(self, c: Any, node: MemoryNode, link_previous: bool) -> MemoryNode:
        prev = None
        if link_previous and (node.session is not None or node.speaker is not None):
            lock_chain(c, self.schema, node)  # one writer per chain, none while deleting
            prev = previous_turn(c, node)
        if prev is None:
            return self._insert(c, node, "")
        node = self._insert(c, node, window(said(prev[1], prev[2]), prev[3]))
        SQLChain(c, node.namespace, "%s").follow(prev[0], node.id, node.created_at.timestamp())
        return node

    def insert_nodes(self, nodes: Sequence[MemoryNode], *, link_previous: bool = False) -> None:
        def work(c: Any) -> None:
            if link_previous:  # each turn reads the one before it: row by row
                for node in nodes:
                    self._insert_linked(c, node, link_previous)
            else:
                self._insert_many(c, nodes)

        self._retrying(work)

    def _insert_many(self, c: Any, nodes: Sequence[MemoryNode]) -> None:
        """Unlinked nodes (bulk loads, migrate, import) in pipelined batches: one round
        trip per ``BULK`` rows instead of two per row. A node whose id is taken gets a
        fresh one through the row-by-row path, as :meth:`_insert` does."""
        for part in chunks(list(nodes), BULK):
            rows = [node_to_row(node) for node in part]
            cur = c.cursor()
            cur.executemany(
                f"INSERT INTO nodes ({', '.join(rows[0])}) VALUES ({_placeholders(rows[0])})"
                " ON CONFLICT (id) DO NOTHING RETURNING id",
                [list(row.values()) for row in rows],
                returning=True,
            )
            landed: set[str] = set()
            while True:
                landed.update(str(r[0]) for r in cur.fetchall())
                if not cur.nextset():
                    break
            versions = []
            for node, row in zip(part, rows, strict=True):
                if node.id not in landed:
                    self._insert(c, node)  # id taken (or twice in the batch): a fresh id
                    continue
                landed.discard(node.id)  # a second node with this id is a conflict
                versions.append(
                    (node.id, node.version, node.content, row["value"], node.session,
                     ts(node.created_at))
                )  # fmt: skip
            cur.executemany(
                _VERSION_INSERT + " ON CONFLICT (node_id, version) DO UPDATE SET"
                " content = excluded.content, value = excluded.value,"
                " source_session = excluded.source_session, created_at = excluded.created_at",
                versions,
            )

    def get_node(self, namespace: str, node_id: str) -> MemoryNode | None:
        found = self.get_nodes(namespace, [node_id])
        return found[0] if found else None

    def get_nodes(self, namespace: str | Sequence[str], ids: Sequence[str]) -> list[MemoryNode]:
        if not ids:
            return []
        nss = [namespace] if isinstance(namespace, str) else list(namespace)
        with self._reading() as c:
            rows = c.execute(
                f"{_SELECT_NODE} WHERE n.id = ANY(%s) AND n.namespace = ANY(%s)",
                (list(ids), nss),
            ).fetchall()
        out = {node.id: node for node in map(node_from_row, rows)}
        return [out[i] for i in ids if i in out]

    def people_of(self, namespace: str | Sequence[str], ids: Sequence[str]) -> dict[str, str]:
        if not ids:
            return {}
        nss = [namespace] if isinstance(namespace, str) else list(namespace)
        with self._reading() as c:
            rows = c.execute(
                "SELECT n.id, coalesce(n.speaker, n.subject) FROM nodes n WHERE n.id = ANY(%s)"
                " AND n.namespace = ANY(%s) AND coalesce(n.speaker, n.subject) IS NOT NULL",
                (list(ids), nss),
            ).fetchall()
        return {str(i): str(who) for i, who in rows}

    def list_nodes(
        self, flt: NodeFilter, *, limit: int = 50, offset: int = 0, order: str = "created"
    ) -> list[MemoryNode]:
        where, params = filter_sql(flt, ph="%s")
        order_sql = _ORDERS.get(order)
        if order_sql is None:
            raise ValidationError(
                f"unknown order {order!r}", hint=f"use one of {', '.join(NODE_ORDERS)}"
            )
        with self._reading() as c:
            rows = c.execute(
                f"{_SELECT_NODE} WHERE {where} ORDER BY {order_sql} LIMIT %s OFFSET %s",
                [*params, limit, offset],
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def count_nodes(self, flt: NodeFilter) -> int:
        where, params = filter_sql(flt, ph="%s")
        with self._reading() as c:
            return int(
                c.execute(f"SELECT count(*) FROM nodes n WHERE {where}", params).fetchone()[0]
            )

    def iter_nodes(self, namespace: str) -> Iterator[MemoryNode]:
        last = 0
        while True:
            with self._reading() as c:
                rows = c.execute(
                    f"SELECT n.seq, {NODE_COLS} FROM nodes n"
                    " WHERE n.namespace = %s AND n.seq > %s ORDER BY n.seq LIMIT 500",
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
                f"SELECT n.seq, {NODE_COLS} FROM nodes n"
                " WHERE n.namespace = %s AND n.id = %s FOR UPDATE",
                (namespace, node_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no memory {node_id!r} in namespace {namespace!r}")
            seq, node = row[0], node_from_row(row[1:])
            changes: dict[str, Any] = dict(patch.extra)
            for name in ("category", "subject", "metadata", "confidence", "decay_rate"):
                if getattr(patch, name) is not None:
                    changes[name] = getattr(patch, name)
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
            if not new_content:
                newrow.pop("embedded")
            newrow.pop("context")
            newrow.pop("id")
            sets = ", ".join(f"{k} = %s::jsonb" if k in _JSON_COLS else f"{k} = %s" for k in newrow)
            if new_content:
                sets += ", embedding = NULL"  # the old vector no longer describes the text
            c.execute(f"UPDATE nodes SET {sets} WHERE seq = %s", [*newrow.values(), seq])
            if new_content and node.type.value == "episodic":
                edited(SQLChain(c, namespace, "%s"), [node_id])
            if "version" in changes:
                c.execute(
                    _VERSION_INSERT,
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
                "UPDATE nodes SET valid_until = %s, updated_at = %s,"
                " times_contradicted = times_contradicted + 1"
                " WHERE namespace = %s AND id = %s AND valid_until IS NULL",
                (ts(now), ts(now), namespace, old_id),
            )
            if cur.rowcount != 1:
                raise NotFoundError(f"no current memory {old_id!r} in namespace {namespace!r}")
            self._insert(c, new)
            c.execute(
                "INSERT INTO edges (id, namespace, source_id, target_id, relation, valid_from,"
                " created_at) VALUES (%s, %s, %s, %s, 'supersedes', %s, %s)",
                (short_id() + short_id(), namespace, new.id, old_id, ts(now), ts(now)),
            )

    def _purge(self, c: Any, namespace: str, ids: Sequence[str]) -> int:
        self._xlock(c, deleting(namespace))  # no turn links to one of them meanwhile
        total = 0
        # the turns that stay next to removed ones hold their words in their windows
        stay = SQLChain(c, namespace, "%s").beside(ids)
        for chunk in chunks(list(ids), 1000):
            mine = [
                r[0]
                for r in c.execute(
                    "SELECT id FROM nodes WHERE namespace = %s AND id = ANY(%s)",
                    (namespace, chunk),
                )
            ]
            if not mine:
                continue
            c.execute("DELETE FROM versions WHERE node_id = ANY(%s)", (mine,))
            self._unlink_entities(c, namespace, mine)  # and entities no memory mentions
            c.execute(
                "DELETE FROM edges WHERE namespace = %s AND (source_id = ANY(%s)"
                " OR target_id = ANY(%s))",
                (namespace, mine, mine),
            )
            total += c.execute(
                "DELETE FROM nodes WHERE namespace = %s AND id = ANY(%s)", (namespace, mine)
            ).rowcount
        chain = SQLChain(c, namespace, "%s")
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
        where, params = filter_sql(flt, ph="%s")
        with self._tx() as c:
            ids = [r[0] for r in c.execute(f"SELECT n.id FROM nodes n WHERE {where}", params)]
            return self._purge(c, namespace, ids)

    def versions(self, namespace: str, node_id: str) -> list[MemoryVersion]:
        with self._reading() as c:
            if (
                c.execute(
                    "SELECT 1 FROM nodes WHERE namespace = %s AND id = %s", (namespace, node_id)
                ).fetchone()
                is None
            ):
                raise NotFoundError(f"no memory {node_id!r} in namespace {namespace!r}")
            rows = c.execute(
                "SELECT node_id, version, content, value::text, source_session, created_at"
                " FROM versions WHERE node_id = %s ORDER BY version",
                (node_id,),
            ).fetchall()
        return [version_from_row(r) for r in rows]

    def import_versions(self, versions: Sequence[MemoryVersion]) -> None:
        with self._tx() as c:
            c.cursor().executemany(
                _VERSION_INSERT + " ON CONFLICT (node_id, version) DO UPDATE SET"
                " content = excluded.content, value = excluded.value,"
                " source_session = excluded.source_session, created_at = excluded.created_at",
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
        where, params = filter_sql(flt, ph="%s")
        with self._reading() as c:
            rows = c.execute(
                f"{_SELECT_NODE} WHERE {where} AND n.content_hash = %s ORDER BY n.seq LIMIT 5",
                [*params, content_hash],
            ).fetchall()
        return [node_from_row(r) for r in rows]

    def prune_oldest(self, flt: NodeFilter, keep: int, *, now: datetime) -> int:
        if len(flt.namespaces) != 1:
            raise ValidationError("pruning works on exactly one namespace")
        where, params = filter_sql(flt, ph="%s")
        with self._tx() as c:
            self._xlock(c, f"prune:{flt.namespaces[0]}")
            ids = [
                r[0]
                for r in c.execute(
                    f"SELECT n.id FROM nodes n WHERE {where} ORDER BY (n.valid_until IS NULL"
                    " OR n.valid_until > %s) DESC, n.created_at DESC, n.seq DESC OFFSET %s",
                    [*params, ts(now), keep],
                )
            ]
            return self._purge(c, flt.namespaces[0], ids) if ids else 0

    def touch(self, namespace: str, ids: Sequence[str], *, now: datetime) -> None:
        if not ids:
            return
        with self._tx() as c:
            rows = c.execute(
                "SELECT seq, access_count, confidence FROM nodes WHERE namespace = %s"
                " AND id = ANY(%s) ORDER BY seq FOR UPDATE",
                (namespace, list(ids)),
            ).fetchall()
            c.cursor().executemany(
                "UPDATE nodes SET access_count = %s, last_accessed = %s, confidence = %s"
                " WHERE seq = %s",
                [
                    (n + 1, ts(now), min(1.0, conf + 0.05 * math.log1p((n + 1) / 20.0)), seq)
                    for seq, n, conf in rows
                ],
            )

    # ------------------------------------------------------------------ edges
    def insert_edge(self, edge: Edge) -> None:
        self.insert_edges([edge])

    def insert_edges(self, edges: Sequence[Edge]) -> None:
        with self._tx() as c:
            c.cursor().executemany(
                "INSERT INTO edges (id, namespace, source_id, target_id, relation,"
                " predicate, weight, confidence, valid_from, valid_until, evidence, created_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s)"
                " ON CONFLICT (id) DO UPDATE SET namespace = excluded.namespace,"
                " source_id = excluded.source_id, target_id = excluded.target_id,"
                " relation = excluded.relation, predicate = excluded.predicate,"
                " weight = excluded.weight, confidence = excluded.confidence,"
                " valid_from = excluded.valid_from, valid_until = excluded.valid_until,"
                " evidence = excluded.evidence, created_at = excluded.created_at",
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
            linked(c, edges, "%s")  # a temporal edge joins its turns' windows

    def edges(self, namespace: str, node_id: str, relation: str | None = None) -> list[Edge]:
        sql = (
            f"SELECT {_EDGE_COLS} FROM edges"
            " WHERE namespace = %s AND (source_id = %s OR target_id = %s)"
        )
        params: list[Any] = [namespace, node_id, node_id]
        if relation is not None:
            sql += " AND relation = %s"
            params.append(relation)
        with self._reading() as c:
            rows = c.execute(sql + " ORDER BY created_at, id", params).fetchall()
        return [edge_from_row(r) for r in rows]

    def neighbours(self, namespace: str, ids: Sequence[str], relation: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {i: [] for i in ids}
        if not ids:
            return out
        with self._reading() as c:
            for src, dst in c.execute(
                "SELECT source_id, target_id FROM edges WHERE namespace = %s AND relation = %s"
                " AND (source_id = ANY(%s) OR target_id = ANY(%s)) ORDER BY seq",
                (namespace, relation, list(ids), list(ids)),
            ).fetchall():
                if src in out:
                    out[src].append(dst)
                if dst in out:
                    out[dst].append(src)
        return out

    def iter_edges(self, namespace: str) -> Iterator[Edge]:
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {_EDGE_COLS} FROM edges WHERE namespace = %s ORDER BY created_at, id",
                (namespace,),
            ).fetchall()
        for r in rows:
            yield edge_from_row(r)

    def iter_versions(self, namespace: str) -> Iterator[MemoryVersion]:
        with self._reading() as c:
            rows = c.execute(
                "SELECT v.node_id, v.version, v.content, v.value::text, v.source_session,"
                " v.created_at FROM versions v JOIN nodes n ON n.id = v.node_id"
                " WHERE n.namespace = %s ORDER BY n.seq, v.version",
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
        with self._reading() as c:

            def counts(sql: str) -> dict[str, int]:  # by key, as SQLite's GROUP BY gives
                return {str(k): int(v) for k, v in sorted(c.execute(sql, (nss,)).fetchall())}

            def one(sql: str) -> int:
                return int(c.execute(sql, (nss,)).fetchone()[0])

            by_type = counts(
                "SELECT type, count(*) FROM nodes WHERE namespace = ANY(%s) GROUP BY 1"
            )
            current = counts(
                "SELECT type, count(*) FROM nodes WHERE namespace = ANY(%s)"
                " AND valid_until IS NULL GROUP BY 1"
            )
            edges = counts(
                "SELECT relation, count(*) FROM edges WHERE namespace = ANY(%s) GROUP BY 1"
            )
            entities = one("SELECT count(*) FROM entities WHERE namespace = ANY(%s)")
            users = one("SELECT count(*) FROM memory_users WHERE namespace = ANY(%s)")
            pending = one("SELECT count(*) FROM nodes WHERE namespace = ANY(%s) AND embedded = 0")
            orphans = one(
                "SELECT count(*) FROM nodes n WHERE n.namespace = ANY(%s)"
                " AND n.type IN ('semantic', 'opinion') AND n.valid_until IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.namespace = n.namespace"
                " AND e.source_id = n.id)"
                " AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.namespace = n.namespace"
                " AND e.target_id = n.id)"
                " AND NOT EXISTS (SELECT 1 FROM node_entities ne WHERE ne.node_id = n.id)"
            )
            size = c.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " JOIN pg_namespace s ON s.oid = c.relnamespace"
                " WHERE s.nspname = current_schema() AND c.relkind IN ('r', 'm')"
            ).fetchone()[0]
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
            entities=entities,
            users=users,
            pending_embeddings=pending,
            size_bytes=int(size),
            embedding_model=self.get_meta("embedding_model"),
            dimension=int(dim) if dim else None,
            namespaces=[ns for ns in self.namespaces() if ns in nss],
            orphans=orphans,
            last_maintenance=last_maintenance,
            pending_sessions=self.count_pending_sessions(nss),
        )
