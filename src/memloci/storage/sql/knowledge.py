"""The knowledge tier's rows (layer: storage): read-only RAG sources and their chunks.

Sources, chunks and their replacement and deletion are written once here; each backend
keeps its search (FTS5 and a cached float32 matrix on SQLite, tsvector and pgvector on
PostgreSQL) and says how a chunk's vector is stored (:meth:`SQLKnowledge._chunk_tail`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from memloci.errors import EmbeddingModelError, StorageError, ValidationError
from memloci.models import KnowledgeChunk, KnowledgeHit, KnowledgeSource
from memloci.storage.rows import dt
from memloci.storage.sql.core import DB, SQLSlice
from memloci.storage.sqlfilter import ts

Names = Sequence[str] | None  # collections to search (None: all)
Vector = npt.NDArray[np.float32]
# the columns a source, a chunk and a hit are read by: the models' field names
_SOURCE_FIELDS = [
    "id",
    "namespace",
    "collection",
    "path",
    "title",
    "content_hash",
    "mtime",
    "size_bytes",
    "chunk_count",
    "embedding_model",
    "added_at",
    "updated_at",
]
_CHUNK_FIELDS = [
    "id",
    "namespace",
    "source_id",
    "collection",
    "ordinal",
    "text",
    "heading",
    "start_char",
    "end_char",
    "embedding_model",
]
_TIMES = ("mtime", "added_at", "updated_at")
SOURCE_COLS = ", ".join(_SOURCE_FIELDS)
CHUNK_COLS = ", ".join(_CHUNK_FIELDS)
# a hit: the chunk joined with its source (c = knowledge_chunks, s = knowledge_sources)
_HIT = {
    "chunk_id": "c.id",
    "text": "c.text",
    "heading": "c.heading",
    "source_id": "c.source_id",
    "path": "s.path",
    "title": "s.title",
    "collection": "c.collection",
    "namespace": "c.namespace",
    "ordinal": "c.ordinal",
}
HIT_COLS = ", ".join(_HIT.values())
HIT_JOIN = "JOIN knowledge_sources s ON s.namespace = c.namespace AND s.id = c.source_id"


def source_from_row(row: Any) -> KnowledgeSource:
    data = dict(zip(_SOURCE_FIELDS, row, strict=False))
    return KnowledgeSource(**{k: dt(v) if k in _TIMES else v for k, v in data.items()})


def chunk_from_row(row: Any) -> KnowledgeChunk:
    return KnowledgeChunk(**dict(zip(_CHUNK_FIELDS, row, strict=False)))


def hit_from_row(row: Any, score: float, match: str) -> KnowledgeHit:
    return KnowledgeHit(**dict(zip(_HIT, row, strict=False)), score=score, match=match)


class SQLKnowledge(SQLSlice[DB]):
    """Knowledge sources and chunks: reads, replacement and deletion."""

    chunk_tail: ClassVar[tuple[str, ...]]  # the columns :meth:`_chunk_tail` fills
    # the driver's constraint errors that reach this code as they are (SQLite's; the
    # PostgreSQL connection reports every driver error as a StorageError already)
    constraint_errors: ClassVar[tuple[type[Exception], ...]] = ()

    def _chunk_tail(
        self, source: KnowledgeSource, vector: npt.NDArray[np.float32] | None
    ) -> tuple[Any, ...]:
        """The values of :attr:`chunk_tail` for one chunk of ``source``."""
        raise NotImplementedError

    def _knowledge_changed(self, c: Any, namespace: str) -> None:
        """A hook: the knowledge of ``namespace`` changed in the open transaction ``c``."""

    # ------------------------------------------------------------------ search
    def knowledge_fulltext(
        self,
        namespaces: Sequence[str],
        match: str,
        *,
        limit: int,
        collections: Sequence[str] | None = None,
    ) -> list[KnowledgeHit]:
        """Chunks matching an FTS5-syntax expression, best first; ``score`` is BM25 on
        FTS5's scale, higher is better."""
        if not match.strip() or not namespaces or collections == []:
            return []
        return self._knowledge_fulltext(namespaces, match, limit, collections)

    def knowledge_vector_search(
        self,
        namespaces: Sequence[str],
        query: npt.NDArray[np.float32],
        *,
        model: str,
        limit: int,
        collections: Sequence[str] | None = None,
    ) -> list[KnowledgeHit]:
        """The ``limit`` chunks (vectors from ``model``) most similar to ``query``, best
        first; ``score`` is cosine similarity."""
        if not namespaces or limit < 1 or collections == []:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32)
        return self._knowledge_vectors(namespaces, q, model, limit, collections)

    def _knowledge_fulltext(
        self, namespaces: Sequence[str], match: str, limit: int, collections: Names
    ) -> list[KnowledgeHit]:
        raise NotImplementedError

    def _knowledge_vectors(
        self, namespaces: Sequence[str], q: Vector, model: str, limit: int, collections: Names
    ) -> list[KnowledgeHit]:
        raise NotImplementedError

    # ------------------------------------------------------------------ reads
    def knowledge_source(self, namespace: str, source_id: str) -> KnowledgeSource | None:
        row = self.db.select_one(
            f"SELECT {SOURCE_COLS} FROM knowledge_sources WHERE namespace = ? AND id = ?",
            (namespace, source_id),
        )
        return None if row is None else source_from_row(row)

    def knowledge_sources(
        self, namespace: str, *, collection: str | None = None
    ) -> list[KnowledgeSource]:
        sql = f"SELECT {SOURCE_COLS} FROM knowledge_sources WHERE namespace = ?"
        params: list[Any] = [namespace]
        if collection is not None:
            sql += " AND collection = ?"
            params.append(collection)
        with self.db.reading() as c:
            rows = c.execute(
                self.db.dialect.q(sql + " ORDER BY collection, path"), params
            ).fetchall()
        return [source_from_row(r) for r in rows]

    def knowledge_chunks(self, namespace: str, source_id: str) -> list[KnowledgeChunk]:
        rows = self.db.select(
            f"SELECT {CHUNK_COLS} FROM knowledge_chunks WHERE namespace = ?"
            " AND source_id = ? ORDER BY ordinal",
            (namespace, source_id),
        )
        return [chunk_from_row(r) for r in rows]

    # ------------------------------------------------------------------ writes
    def replace_knowledge(
        self,
        source: KnowledgeSource,
        chunks_: Sequence[KnowledgeChunk],
        vectors: npt.NDArray[np.float32] | None,
    ) -> None:
        """Store a source and its chunks (vectors from ``source.embedding_model``, or none),
        replacing whatever the source held before: one transaction. A constraint error of
        the driver (:attr:`constraint_errors`) is a :class:`StorageError` naming the source."""
        if vectors is not None and (vectors.ndim != 2 or len(vectors) != len(chunks_)):
            raise EmbeddingModelError(
                f"expected {len(chunks_)} chunk vectors, got an array of shape {vectors.shape}"
            )
        if vectors is not None and source.embedding_model is None:
            raise ValidationError("chunk vectors need the source's embedding_model")
        try:
            self._replace_knowledge(source, chunks_, vectors)
        except self.constraint_errors as exc:
            raise StorageError(f"could not store knowledge source {source.path!r}: {exc}") from exc

    def _replace_knowledge(
        self, source: KnowledgeSource, chunks_: Sequence[KnowledgeChunk], vectors: Vector | None
    ) -> None:
        d, ns = self.db.dialect, source.namespace
        columns = f"{CHUNK_COLS}, {', '.join(self.chunk_tail)}"
        marks = ", ".join("?" * (10 + len(self.chunk_tail)))
        with self.db.tx() as c:
            self.db.xlock(c, f"knowledge:{ns}:{source.id}")
            c.execute(
                d.q("DELETE FROM knowledge_chunks WHERE namespace = ? AND source_id = ?"),
                (ns, source.id),
            )
            c.execute(
                d.q(
                    f"INSERT INTO knowledge_sources ({SOURCE_COLS})"
                    f" VALUES ({', '.join('?' * 12)})"
                    " ON CONFLICT (namespace, id) DO UPDATE SET collection = excluded.collection,"
                    " path = excluded.path, title = excluded.title,"
                    " content_hash = excluded.content_hash, mtime = excluded.mtime,"
                    " size_bytes = excluded.size_bytes, chunk_count = excluded.chunk_count,"
                    " embedding_model = excluded.embedding_model,"
                    " updated_at = excluded.updated_at"
                ),
                (
                    source.id,
                    ns,
                    source.collection,
                    source.path,
                    source.title,
                    source.content_hash,
                    ts(source.mtime),
                    source.size_bytes,
                    len(chunks_),
                    source.embedding_model,
                    ts(source.added_at),
                    ts(source.updated_at),
                ),
            )
            model = source.embedding_model if vectors is not None else None
            d.many(
                c,
                f"INSERT INTO knowledge_chunks ({columns}) VALUES ({marks})",
                [
                    (
                        ch.id,
                        ns,
                        source.id,
                        source.collection,
                        ch.ordinal,
                        ch.text,
                        ch.heading,
                        ch.start_char,
                        ch.end_char,
                        model,
                        *self._chunk_tail(source, None if vectors is None else vectors[i]),
                    )
                    for i, ch in enumerate(chunks_)
                ],
            )
            self._knowledge_changed(c, ns)

    def delete_knowledge(self, namespace: str, source_ids: Sequence[str]) -> int:
        """Delete sources with their chunks; returns how many sources were deleted."""
        d = self.db.dialect
        ids = list(dict.fromkeys(source_ids))
        if not ids:
            return 0
        with self.db.tx() as c:
            d.delete_in(c, "knowledge_chunks", "source_id", namespace, ids)
            deleted = d.delete_in(c, "knowledge_sources", "id", namespace, ids)
            self._knowledge_changed(c, namespace)
        return deleted
