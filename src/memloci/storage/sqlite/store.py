"""SQLite backend (layer: storage): the default store, everything in one file.

The reads and edits both backends word alike come from :mod:`memloci.storage.sql`; here
inserting memories, reading many by id, purging and neighbours. Search primitives come
from :mod:`memloci.storage.sqlite.search`, plumbing from :mod:`memloci.storage.sqlite.base`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from memloci.errors import StorageError
from memloci.models import MemoryNode, short_id
from memloci.storage.rows import NODE_COLUMNS, node_from_row, node_to_row
from memloci.storage.sql.chains import previous_turn
from memloci.storage.sql.inventory import SQLInventory
from memloci.storage.sql.nodes import SQLNodes
from memloci.storage.sqlfilter import ts
from memloci.storage.sqlite.base import IntegrityError, chunks, qs
from memloci.storage.sqlite.consolidation import SQLiteConsolidation
from memloci.storage.sqlite.doctor import SQLiteDoctor
from memloci.storage.sqlite.knowledge import SQLiteKnowledge
from memloci.storage.sqlite.paging import SQLitePaging
from memloci.storage.sqlite.privacy import SQLitePrivacy
from memloci.storage.sqlite.records import SQLiteRecords
from memloci.storage.sqlite.search import SQLiteSearch
from memloci.storage.sqlite.walks import SQLiteWalks
from memloci.storage.windows import SQLChain, restart, said, window


class SQLiteStore(
    SQLNodes,
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

    supports_vectors = True

    def _vector_bytes(self, value: object) -> bytes:
        return bytes(cast("bytes", value))

    def _text_changed(self, c: Any, rowid: int) -> str:
        self._drop_vectors(c, [rowid])
        return ""

    def _size_bytes(self, c: Any) -> int:
        pages = c.execute("PRAGMA page_count").fetchone()[0]
        return int(pages) * int(c.execute("PRAGMA page_size").fetchone()[0])

    # ------------------------------------------------------------------ nodes
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

    # ------------------------------------------------------------------ edges
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
