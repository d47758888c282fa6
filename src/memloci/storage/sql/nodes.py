"""Memories, their versions and edges (layer: storage), on either SQL backend.

What stays with each backend: inserting memories (SQLite retries an id on a constraint
error, PostgreSQL pipelines batches and locks a chain), reading many by id (each
backend's fastest plan), purging (vectors and locks differ), neighbours (SQLite's index
order) and the store's size on disk.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, ClassVar

from memloci.errors import NotFoundError, ValidationError
from memloci.models import NODE_ORDERS, Edge, MemoryNode, MemoryVersion, short_id
from memloci.rules import reinforced
from memloci.storage.access import live
from memloci.storage.base import NodeFilter, NodePatch
from memloci.storage.rows import (
    edge_from_row,
    node_from_row,
    node_to_row,
    patched,
    version_from_row,
)
from memloci.storage.sql.core import DB, JSON_NODE_COLUMNS, SQLSlice, require_node
from memloci.storage.sqlfilter import filter_sql, ts
from memloci.storage.windows import SQLChain, edited, linked, restart, said, window

_ORDERS = {
    "created": "n.created_at, n.{seq}",
    "-created": "n.created_at DESC, n.{seq} DESC",
    "event": "n.event_time, n.{seq}",
    "-event": "n.event_time DESC, n.{seq} DESC",
    "category": "n.category, n.created_at, n.{seq}",
    "confidence": f"{live('confidence')}, n.{{seq}}",
    "-confidence": f"{live('confidence')} DESC, n.created_at DESC, n.{{seq}} DESC",
    "rowid": "n.{seq}",
    "protected": "n.decay_rate > 0, n.updated_at DESC, {id}",
}
assert set(_ORDERS) == set(NODE_ORDERS)
_EDGE_COLUMNS = (
    "id",
    "namespace",
    "source_id",
    "target_id",
    "relation",
    "predicate",
    "weight",
    "confidence",
    "valid_from",
    "valid_until",
    "evidence",
    "created_at",
)
_VERSION_COLUMNS = ("node_id", "version", "content", "value", "source_session", "created_at")


class SQLNodes(SQLSlice[DB]):
    """Nodes, versions and edges: the reads and edits both backends word alike."""

    # ------------------------------------------------------------------ backend hooks

    def _insert_after(self, c: Any, node: MemoryNode, prev: Sequence[Any]) -> MemoryNode:
        """Insert ``node`` as the next turn after ``prev`` (a row of
        :func:`~memloci.storage.sql.chains.previous_turn`): its window shows the turn
        before it, a temporal edge links them and the earlier turns' windows show it."""
        context = window(said(prev[1], prev[2]), prev[3])
        node = self._insert(c, node, context)
        SQLChain(c, node.namespace, self.db.dialect.ph).follow(
            prev[0],
            node.id,
            node.created_at.timestamp(),
            (said(node.speaker, node.content), context, ""),
        )
        return node

    def _insert(self, c: Any, node: MemoryNode, context: str = "") -> MemoryNode:
        """Insert ``node`` (a fresh id when its id is taken) and its first version."""
        raise NotImplementedError

    def _purging(self, c: Any, namespace: str) -> None:
        """Memories of ``namespace`` are about to be deleted in the transaction ``c``."""
        raise NotImplementedError

    def _touching(self, c: Any, namespace: str) -> None:
        """Reads of memories of ``namespace`` are about to be counted in ``c``: no delete
        of them may commit meanwhile (it would leave their ``node_access`` rows)."""

    neighbour_order: ClassVar[str] = ""  # how ``neighbours`` reads its edges

    def _text_changed(self, c: Any, rowid: int) -> str:
        """The memory at ``rowid`` has a new text: drop its vector (SQL to add to its
        ``UPDATE … SET``, or done here)."""
        raise NotImplementedError

    def _unlink_entities(self, c: Any, namespace: str, ids: Sequence[str]) -> int:
        """Before memories ``ids`` are hard-deleted: drop their entity links (and the
        entities no memory links any more); how many entities were deleted."""
        raise NotImplementedError

    # ------------------------------------------------------------------ nodes
    def id_exists(self, node_id: str) -> bool:
        with self.db.reading() as c:
            found = c.execute(self.db.dialect.q("SELECT 1 FROM nodes WHERE id = ?"), (node_id,))
            return found.fetchone() is not None

    def id_namespaces(
        self, ids: Sequence[str], *, edges: bool = False, entities: bool = False
    ) -> dict[str, str]:
        if not ids:
            return {}
        table = "edges" if edges else "entities" if entities else "nodes"
        rows, params = self.db.dialect.by_ids("t", ids, table)
        with self.db.reading() as c:
            found = c.execute(
                self.db.dialect.q(f"SELECT t.id, t.namespace FROM {rows} TRUE"), params
            ).fetchall()
        return {str(i): str(ns) for i, ns in found}

    def get_nodes(self, namespace: str | Sequence[str], ids: Sequence[str]) -> list[MemoryNode]:
        d = self.db.dialect
        if not ids:
            return []
        nss = [namespace] if isinstance(namespace, str) else list(namespace)
        nodes, params = d.by_ids("n", ids)
        in_ns, ns_params = d.any(d.unindexed("n.namespace"), nss)
        with self.db.reading() as c:
            rows = c.execute(
                d.q(f"SELECT {self.db.cols.node} FROM {nodes} {in_ns}"), [*params, *ns_params]
            ).fetchall()
        out = {node.id: node for node in map(node_from_row, rows)}
        return [out[i] for i in ids if i in out]

    def people_of(self, namespace: str | Sequence[str], ids: Sequence[str]) -> dict[str, str]:
        d = self.db.dialect
        if not ids:
            return {}
        nss = [namespace] if isinstance(namespace, str) else list(namespace)
        nodes, params = d.by_ids("n", ids)
        in_ns, ns_params = d.any(d.unindexed("n.namespace"), nss)
        rows = self.db.select(
            f"SELECT n.id, coalesce(n.speaker, n.subject) FROM {nodes} {in_ns}"
            " AND coalesce(n.speaker, n.subject) IS NOT NULL",
            [*params, *ns_params],
        )
        return {str(i): str(who) for i, who in rows}

    def get_node(self, namespace: str, node_id: str) -> MemoryNode | None:
        found = self.get_nodes(namespace, [node_id])
        return found[0] if found else None

    def list_nodes(
        self, flt: NodeFilter, *, limit: int = 50, offset: int = 0, order: str = "created"
    ) -> list[MemoryNode]:
        d = self.db.dialect
        where, params = filter_sql(flt)
        order_sql = _ORDERS.get(order)
        if order_sql is None:
            raise ValidationError(
                f"unknown order {order!r}", hint=f"use one of {', '.join(NODE_ORDERS)}"
            )
        order_sql = order_sql.format(seq=d.rowid, id=d.bytewise("n.id"))
        rows = self.db.select(
            f"SELECT {self.db.cols.node} FROM nodes n WHERE {where}"
            f" ORDER BY {order_sql} LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [node_from_row(r) for r in rows]

    def count_nodes(self, flt: NodeFilter) -> int:
        where, params = filter_sql(flt)
        with self.db.reading() as c:
            sql = self.db.dialect.q(f"SELECT count(*) FROM nodes n WHERE {where}")
            return int(c.execute(sql, params).fetchone()[0])

    def iter_nodes(self, namespace: str) -> Iterator[MemoryNode]:
        rowid = f"n.{self.db.dialect.rowid}"
        sql = self.db.dialect.q(
            f"SELECT {rowid}, {self.db.cols.node} FROM nodes n"
            f" WHERE n.namespace = ? AND {rowid} > ? ORDER BY {rowid} LIMIT 500"
        )
        last = 0
        while True:
            with self.db.reading() as c:
                rows = c.execute(sql, (namespace, last)).fetchall()
            if not rows:
                return
            for r in rows:
                yield node_from_row(r[1:])
            last = rows[-1][0]

    def update_node(
        self, namespace: str, node_id: str, patch: NodePatch, *, session: str | None = None
    ) -> MemoryNode:
        d = self.db.dialect
        with self.db.tx() as c:
            row = c.execute(
                d.q(
                    f"SELECT n.{d.rowid}, {self.db.cols.node} FROM nodes n"
                    f" WHERE {d.unindexed('n.namespace')} = ? AND n.id = ?"
                    + (" FOR UPDATE" if d.row_locks else "")
                ),
                (namespace, node_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no memory {node_id!r} in namespace {namespace!r}")
            rowid, node = row[0], node_from_row(row[1:])
            updated, new_content = patched(node, patch)
            newrow = node_to_row(updated)
            dropped = self._text_changed(c, rowid) if new_content else ""
            if not new_content:
                newrow.pop("embedded")
            newrow.pop("context")
            newrow.pop("id")
            for column in ("access_count", "last_accessed"):  # counted in node_access
                newrow.pop(column)
            if updated.confidence == node.confidence:
                newrow.pop("confidence")
            else:  # set outright: over the reinforced value too
                c.execute(
                    d.q("UPDATE node_access SET confidence = ? WHERE node_id = ?"),
                    (updated.confidence, node_id),
                )
            sets = ", ".join(f"{k} = {d.jsonb if k in JSON_NODE_COLUMNS else '?'}" for k in newrow)
            c.execute(
                d.q(f"UPDATE nodes SET {sets}{dropped} WHERE {d.rowid} = ?"),
                [*newrow.values(), rowid],
            )
            if new_content and node.type.value == "episodic":
                edited(SQLChain(c, namespace, d.ph), [node_id])
            if updated.version != node.version:
                c.execute(
                    d.q(
                        f"INSERT INTO versions ({', '.join(_VERSION_COLUMNS)})"
                        f" VALUES (?, ?, ?, {d.jsonb}, ?, ?)"
                    ),
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
        d = self.db.dialect
        with self.db.tx() as c:
            cur = c.execute(
                d.q(
                    "UPDATE nodes SET valid_until = ?, updated_at = ?,"
                    " times_contradicted = times_contradicted + 1"
                    f" WHERE {d.unindexed('namespace')} = ? AND id = ? AND valid_until IS NULL"
                ),
                (ts(now), ts(now), namespace, old_id),
            )
            if cur.rowcount != 1:
                raise NotFoundError(f"no current memory {old_id!r} in namespace {namespace!r}")
            self._insert(c, new)
            c.execute(
                d.q(
                    "INSERT INTO edges (id, namespace, source_id, target_id, relation,"
                    " valid_from, created_at) VALUES (?, ?, ?, ?, 'supersedes', ?, ?)"
                ),
                (short_id() + short_id(), namespace, new.id, old_id, ts(now), ts(now)),
            )

    def _purge(self, c: Any, namespace: str, ids: Sequence[str]) -> int:
        """Delete these memories of ``namespace`` and all that hangs on them."""
        d = self.db.dialect
        self._purging(c, namespace)
        total = 0
        # the turns that stay next to removed ones hold their words in their windows
        stay = SQLChain(c, namespace, d.ph).beside(ids)
        for chunk in d.chunks(ids, arrays=1000):
            test, params = d.any("id", chunk)
            found = c.execute(
                d.q(
                    f"SELECT id, {d.rowid} FROM nodes"
                    f" WHERE {d.unindexed('namespace')} = ? AND {test}"
                ),
                [namespace, *params],
            ).fetchall()
            if not found:
                continue
            mine, rowids = [r[0] for r in found], [r[1] for r in found]
            self.db.drop_vectors(c, rowids)
            test, params = d.any("node_id", mine)
            c.execute(d.q(f"DELETE FROM versions WHERE {test}"), params)
            c.execute(d.q(f"DELETE FROM node_access WHERE {test}"), params)
            self._unlink_entities(c, namespace, mine)  # and entities no memory mentions
            sources, params = d.any("source_id", mine)
            targets, more = d.any("target_id", mine)
            c.execute(
                d.q(f"DELETE FROM edges WHERE namespace = ? AND ({sources} OR {targets})"),
                [namespace, *params, *more],
            )
            if d.rowid_key:
                test, params = d.any(d.rowid, rowids)
            else:
                test, params = d.any("id", mine)
                test, params = f"namespace = ? AND {test}", [namespace, *params]
            total += c.execute(d.q(f"DELETE FROM nodes WHERE {test}"), params).rowcount
        chain = SQLChain(c, namespace, d.ph)
        for node_id, column in stay:
            restart(chain, node_id, column)
        return int(total)

    def purge_node(self, namespace: str, node_id: str) -> bool:
        with self.db.tx() as c:
            return self._purge(c, namespace, [node_id]) > 0

    def clear(self, namespace: str, flt: NodeFilter | None = None) -> int:
        flt = flt or NodeFilter(namespaces=(namespace,), include_invalid=True)
        if tuple(flt.namespaces) != (namespace,):
            raise ValidationError("clear works on exactly one namespace")
        where, params = filter_sql(flt)
        with self.db.tx() as c:
            sql = self.db.dialect.q(f"SELECT n.id FROM nodes n WHERE {where}")
            ids = [r[0] for r in c.execute(sql, params).fetchall()]
            return self._purge(c, namespace, ids)

    def versions(self, namespace: str, node_id: str) -> list[MemoryVersion]:
        d = self.db.dialect
        with self.db.reading() as c:
            require_node(c, d, namespace, node_id)
            rows = c.execute(
                d.q(
                    f"SELECT node_id, version, content, {d.json('value')}, source_session,"
                    " created_at FROM versions WHERE node_id = ? ORDER BY version"
                ),
                (node_id,),
            ).fetchall()
        return [version_from_row(r) for r in rows]

    @functools.cached_property
    def _version_upsert(self) -> str:
        """The statement (``?`` placeholders, as :meth:`Dialect.q` takes them) that writes
        a versions row, replacing the row of the same node and version: a new memory's
        first version, an imported one."""
        d = self.db.dialect
        return d.upsert("versions", _VERSION_COLUMNS, ("node_id", "version"), json=["value"])

    def import_versions(self, versions: Sequence[MemoryVersion]) -> None:
        d = self.db.dialect
        with self.db.tx() as c:
            d.many(
                c,
                self._version_upsert,
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
        d = self.db.dialect
        where, params = filter_sql(flt)
        rows = self.db.select(
            f"SELECT {self.db.cols.node} FROM nodes n WHERE {where}"
            f" AND n.content_hash = ? ORDER BY n.{d.rowid} LIMIT 5",
            [*params, content_hash],
        )
        return [node_from_row(r) for r in rows]

    def prune_oldest(self, flt: NodeFilter, keep: int, *, now: datetime) -> int:
        d = self.db.dialect
        if len(flt.namespaces) != 1:
            raise ValidationError("pruning works on exactly one namespace")
        where, params = filter_sql(flt)
        with self.db.tx() as c:
            self.db.xlock(c, f"prune:{flt.namespaces[0]}")
            ids = [
                r[0]
                for r in c.execute(
                    d.q(
                        f"SELECT n.id FROM nodes n WHERE {where} ORDER BY (n.valid_until IS NULL"
                        f" OR n.valid_until > ?) DESC, n.created_at DESC, n.{d.rowid} DESC"
                        f" {d.offset}"
                    ),
                    [*params, ts(now), keep],
                ).fetchall()
            ]
            return self._purge(c, flt.namespaces[0], ids) if ids else 0

    def touch(self, namespace: str, ids: Sequence[str], *, now: datetime) -> None:
        """Count a read of each memory and reinforce it (:func:`memloci.rules.reinforced`),
        in its narrow ``node_access`` row (:mod:`memloci.storage.access`): the ``nodes``
        row is only read, the first time, for the values the counting starts from."""
        d = self.db.dialect
        if not ids:
            return
        ordered = sorted(set(ids))  # one lock order for every writer
        lock = " ORDER BY node_id FOR UPDATE" if d.row_locks else ""
        with self.db.tx() as c:
            self._touching(c, namespace)
            test, params = d.any("id", ordered)
            c.execute(
                d.q(
                    "INSERT INTO node_access (node_id, namespace, access_count, last_accessed,"
                    " confidence) SELECT id, namespace, access_count, last_accessed, confidence"
                    f" FROM nodes WHERE {d.unindexed('namespace')} = ? AND {test}"
                    " ORDER BY id ON CONFLICT (node_id) DO NOTHING"
                ),
                [namespace, *params],
            )
            test, params = d.any("node_id", ordered)
            rows = c.execute(
                d.q(
                    "SELECT node_id, access_count, confidence FROM node_access"
                    f" WHERE namespace = ? AND {test}{lock}"
                ),
                [namespace, *params],
            ).fetchall()
            d.many(
                c,
                "UPDATE node_access SET access_count = ?, last_accessed = ?, confidence = ?"
                " WHERE node_id = ?",
                [(n + 1, ts(now), reinforced(conf, n), node_id) for node_id, n, conf in rows],
            )

    # ------------------------------------------------------------------ edges
    def insert_edge(self, edge: Edge) -> None:
        self.insert_edges([edge])

    def insert_edges(self, edges: Sequence[Edge]) -> None:
        d = self.db.dialect
        with self.db.tx() as c:
            d.many(
                c,
                d.upsert("edges", _EDGE_COLUMNS, ("id",), json=["evidence"]),
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
            linked(c, edges, d.ph)  # a temporal edge joins its turns' windows

    def neighbours(self, namespace: str, ids: Sequence[str], relation: str) -> dict[str, list[str]]:
        d = self.db.dialect
        out: dict[str, list[str]] = {i: [] for i in ids}
        if not ids:
            return out
        sources, params = d.any("source_id", ids)
        targets, more = d.any("target_id", ids)
        rows = self.db.select(
            "SELECT source_id, target_id FROM edges WHERE namespace = ? AND relation = ?"
            f" AND ({sources} OR {targets}){self.neighbour_order}",
            [namespace, relation, *params, *more],
        )
        for src, dst in rows:
            if src in out:
                out[src].append(dst)
            if dst in out:
                out[dst].append(src)
        return out

    def _edge_columns(self) -> str:
        return ", ".join(self.db.dialect.json(c) if c == "evidence" else c for c in _EDGE_COLUMNS)

    def edges(self, namespace: str, node_id: str, relation: str | None = None) -> list[Edge]:
        sql = (
            f"SELECT {self._edge_columns()} FROM edges"
            " WHERE namespace = ? AND (source_id = ? OR target_id = ?)"
        )
        params: list[Any] = [namespace, node_id, node_id]
        if relation is not None:
            sql += " AND relation = ?"
            params.append(relation)
        with self.db.reading() as c:
            rows = c.execute(self.db.dialect.q(sql + " ORDER BY created_at, id"), params).fetchall()
        return [edge_from_row(r) for r in rows]

    def iter_edges(self, namespace: str) -> Iterator[Edge]:
        rows = self.db.select(
            f"SELECT {self._edge_columns()} FROM edges WHERE namespace = ? ORDER BY created_at, id",
            (namespace,),
        )
        for r in rows:
            yield edge_from_row(r)

    def iter_versions(self, namespace: str) -> Iterator[MemoryVersion]:
        d = self.db.dialect
        rows = self.db.select(
            f"SELECT v.node_id, v.version, v.content, {d.json('v.value')},"
            " v.source_session, v.created_at FROM versions v"
            " JOIN nodes n ON n.id = v.node_id WHERE n.namespace = ?"
            f" ORDER BY n.{d.rowid}, v.version",
            (namespace,),
        )
        for r in rows:
            yield version_from_row(r)
