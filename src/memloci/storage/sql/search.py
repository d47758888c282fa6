"""The search primitives both backends word alike (layer: storage): the embedding queue
and fuzzy key search. Full text and vectors are each backend's own (FTS5 and a cached
matrix on SQLite; tsvector and pgvector HNSW on PostgreSQL)."""

from __future__ import annotations

from memloci.storage.base import NodeFilter, PendingEmbedding
from memloci.storage.sql.core import DB, SQLSlice
from memloci.storage.sql.records import like
from memloci.storage.sqlfilter import filter_sql


class SQLSearch(SQLSlice[DB]):
    def pending_embeddings(self, limit: int) -> list[PendingEmbedding]:
        rows = self.db.select(
            "SELECT id, content_hash, content, speaker, key, subject FROM nodes"
            f" WHERE embedded = 0 ORDER BY {self.db.dialect.rowid} LIMIT ?",
            (limit,),
        )
        return [PendingEmbedding(*r) for r in rows]

    def key_search(self, flt: NodeFilter, key_norm: str, limit: int) -> list[tuple[str, float]]:
        """Memories whose key holds ``key_norm``: 1.0 exact, 0.8 prefix, 0.6 contained."""
        d = self.db.dialect
        if not key_norm:
            return []
        where, params = filter_sql(flt)
        rows = self.db.select(
            f"SELECT n.id, n.key_norm FROM nodes n WHERE {where}"
            f" AND n.key_norm IS NOT NULL AND n.key_norm {d.like}"
            f" ORDER BY length(n.key_norm), n.{d.rowid} LIMIT ?",
            [*params, like(key_norm), limit],
        )
        out = []
        for node_id, key in rows:
            score = 1.0 if key == key_norm else 0.8 if key.startswith(key_norm) else 0.6
            out.append((node_id, score))
        out.sort(key=lambda r: -r[1])
        return out
