"""SQLite knowledge tier (layer: storage): read-only RAG sources, their chunks and search.

Chunk vectors are float32 blobs in ``knowledge_chunks.embedding`` (the ``node_vectors``
format), searched app-side: one float32 matrix per (namespace, model) is cached in the
process and reloaded when the namespace's ``knowledge_seq:<namespace>`` meta counter
moves (every write bumps it, so other processes' writes are seen too). Scores are
higher-is-better: cosine similarity for vectors, ``-bm25`` for full text.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from memloci.errors import EmbeddingModelError, StorageError, ValidationError
from memloci.models import KnowledgeChunk, KnowledgeHit, KnowledgeSource
from memloci.storage.rows import dt
from memloci.storage.sqlfilter import ts
from memloci.storage.sqlite.base import IntegrityError, OperationalError, SQLiteBase, chunks, qs

_SOURCE_COLS = (
    "id, namespace, collection, path, title, content_hash, mtime, size_bytes, chunk_count,"
    " embedding_model, added_at, updated_at"
)
_CHUNK_COLS = (
    "id, namespace, source_id, collection, ordinal, text, heading, start_char, end_char,"
    " embedding_model"
)
# a hit: the chunk joined with its source (c = knowledge_chunks, s = knowledge_sources)
_HIT_COLS = (
    "c.id, c.text, c.heading, c.source_id, s.path, s.title, c.collection, c.namespace, c.ordinal"
)
_HIT_JOIN = "JOIN knowledge_sources s ON s.namespace = c.namespace AND s.id = c.source_id"
_CACHE_LOCK = threading.Lock()  # guards every store's knowledge cache (reloads are rare)


def _source(row: Any) -> KnowledgeSource:
    return KnowledgeSource(
        id=row[0], namespace=row[1], collection=row[2], path=row[3], title=row[4],
        content_hash=row[5], mtime=dt(row[6]), size_bytes=row[7], chunk_count=row[8],
        embedding_model=row[9], added_at=dt(row[10]), updated_at=dt(row[11]),
    )  # fmt: skip


def _chunk(row: Any) -> KnowledgeChunk:
    return KnowledgeChunk(
        id=row[0], namespace=row[1], source_id=row[2], collection=row[3], ordinal=row[4],
        text=row[5], heading=row[6], start_char=row[7], end_char=row[8], embedding_model=row[9],
    )  # fmt: skip


def _hit(row: Any, score: float, match: str) -> KnowledgeHit:
    return KnowledgeHit(
        chunk_id=row[0], text=row[1], heading=row[2], source_id=row[3], path=row[4],
        title=row[5], collection=row[6], namespace=row[7], ordinal=row[8], score=score,
        match=match,
    )  # fmt: skip


@dataclass
class _Matrix:
    """The cached vectors of one (namespace, model): rowids, collections, unit rows."""

    seq: str
    rowids: npt.NDArray[np.int64]
    collections: npt.NDArray[np.str_]
    mat: npt.NDArray[np.float32]


class SQLiteKnowledge(SQLiteBase):
    """Knowledge sources and chunks on SQLite (see the module docstring)."""

    _kcache: dict[tuple[str, str], _Matrix] | None = None

    # ------------------------------------------------------------------ reads
    def knowledge_source(self, namespace: str, source_id: str) -> KnowledgeSource | None:
        with self._reading() as c:
            row = c.execute(
                f"SELECT {_SOURCE_COLS} FROM knowledge_sources WHERE namespace = ? AND id = ?",
                (namespace, source_id),
            ).fetchone()
        return None if row is None else _source(row)

    def knowledge_sources(
        self, namespace: str, *, collection: str | None = None
    ) -> list[KnowledgeSource]:
        sql = f"SELECT {_SOURCE_COLS} FROM knowledge_sources WHERE namespace = ?"
        params: list[Any] = [namespace]
        if collection is not None:
            sql += " AND collection = ?"
            params.append(collection)
        with self._reading() as c:
            rows = c.execute(sql + " ORDER BY collection, path", params).fetchall()
        return [_source(r) for r in rows]

    def knowledge_chunks(self, namespace: str, source_id: str) -> list[KnowledgeChunk]:
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {_CHUNK_COLS} FROM knowledge_chunks WHERE namespace = ? AND source_id = ?"
                " ORDER BY ordinal",
                (namespace, source_id),
            ).fetchall()
        return [_chunk(r) for r in rows]

    # ------------------------------------------------------------------ writes
    def replace_knowledge(
        self,
        source: KnowledgeSource,
        chunks_: Sequence[KnowledgeChunk],
        vectors: npt.NDArray[np.float32] | None,
    ) -> None:
        """Store a source and its chunks (vectors from ``source.embedding_model``, or none),
        replacing whatever the source held before: one transaction."""
        if vectors is not None and (vectors.ndim != 2 or len(vectors) != len(chunks_)):
            raise EmbeddingModelError(
                f"expected {len(chunks_)} chunk vectors, got an array of shape {vectors.shape}"
            )
        if vectors is not None and source.embedding_model is None:
            raise ValidationError("chunk vectors need the source's embedding_model")
        try:
            self._replace_knowledge(source, chunks_, vectors)
        except IntegrityError as exc:
            raise StorageError(f"could not store knowledge source {source.path!r}: {exc}") from exc

    def _replace_knowledge(
        self,
        source: KnowledgeSource,
        chunks_: Sequence[KnowledgeChunk],
        vectors: npt.NDArray[np.float32] | None,
    ) -> None:
        ns = source.namespace
        with self._tx() as c:
            c.execute(
                "DELETE FROM knowledge_chunks WHERE namespace = ? AND source_id = ?",
                (ns, source.id),
            )
            c.execute(
                f"INSERT INTO knowledge_sources ({_SOURCE_COLS}) VALUES ({qs(range(12))})"
                " ON CONFLICT (namespace, id) DO UPDATE SET collection = excluded.collection,"
                " path = excluded.path, title = excluded.title,"
                " content_hash = excluded.content_hash, mtime = excluded.mtime,"
                " size_bytes = excluded.size_bytes, chunk_count = excluded.chunk_count,"
                " embedding_model = excluded.embedding_model, updated_at = excluded.updated_at",
                (
                    source.id, ns, source.collection, source.path, source.title,
                    source.content_hash, ts(source.mtime), source.size_bytes, len(chunks_),
                    source.embedding_model, ts(source.added_at), ts(source.updated_at),
                ),
            )  # fmt: skip
            model = source.embedding_model if vectors is not None else None
            c.executemany(
                f"INSERT INTO knowledge_chunks ({_CHUNK_COLS}, embedding) VALUES ({qs(range(11))})",
                [
                    (
                        ch.id, ns, source.id, source.collection, ch.ordinal, ch.text, ch.heading,
                        ch.start_char, ch.end_char, model,
                        None if vectors is None
                        else np.ascontiguousarray(vectors[i], dtype=np.float32).tobytes(),
                    )
                    for i, ch in enumerate(chunks_)
                ],
            )  # fmt: skip
            self._bump(c, f"knowledge_seq:{ns}")

    def delete_knowledge(self, namespace: str, source_ids: Sequence[str]) -> int:
        """Delete sources with their chunks; returns how many sources were deleted."""
        ids = list(dict.fromkeys(source_ids))
        if not ids:
            return 0
        deleted = 0
        with self._tx() as c:
            for part in chunks(ids, 500):
                c.execute(
                    "DELETE FROM knowledge_chunks WHERE namespace = ?"
                    f" AND source_id IN ({qs(part)})",
                    [namespace, *part],
                )
                deleted += c.execute(
                    f"DELETE FROM knowledge_sources WHERE namespace = ? AND id IN ({qs(part)})",
                    [namespace, *part],
                ).rowcount
            self._bump(c, f"knowledge_seq:{namespace}")
        return int(deleted)

    # ------------------------------------------------------------------ search
    def knowledge_fulltext(
        self,
        namespaces: Sequence[str],
        match: str,
        *,
        limit: int,
        collections: Sequence[str] | None = None,
    ) -> list[KnowledgeHit]:
        """Chunks matching an FTS5 expression, best first; ``score`` is ``-bm25``."""
        if not match.strip() or not namespaces or collections == []:
            return []
        where, params = f"c.namespace IN ({qs(namespaces)})", list(namespaces)
        if collections is not None:
            where += f" AND c.collection IN ({qs(collections)})"
            params += list(collections)
        # CROSS JOIN keeps FTS5 as the outer loop; weights: text, heading, title
        sql = (
            f"SELECT {_HIT_COLS}, bm25(knowledge_fts, 1.0, 0.5, 0.3) AS r FROM knowledge_fts"
            f" CROSS JOIN knowledge_chunks c ON c.rowid = knowledge_fts.rowid {_HIT_JOIN}"
            f" WHERE knowledge_fts MATCH ? AND {where} ORDER BY r LIMIT ?"
        )
        try:
            with self._reading() as c:
                rows = c.execute(sql, [match, *params, limit]).fetchall()
        except OperationalError as exc:
            raise ValidationError(f"bad full-text query: {exc}") from exc
        return [_hit(r, -float(r[-1]), "fulltext") for r in rows]

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
        first; ``score`` is cosine similarity (vectors are unit length)."""
        if not namespaces or limit < 1 or collections == []:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32)
        found: list[tuple[float, int]] = []
        for ns in dict.fromkeys(namespaces):
            part = self._knowledge_matrix(ns, model)
            if part is None or not len(part.rowids):
                continue
            if part.mat.shape[1] != q.shape[0] or q.ndim != 1:
                raise EmbeddingModelError(
                    f"query vector has shape {q.shape}, knowledge chunks from {model!r} are "
                    f"{part.mat.shape[1]}-d"
                )
            rows = np.arange(len(part.rowids))
            if collections is not None:
                rows = np.flatnonzero(np.isin(part.collections, list(collections)))
            if not len(rows):
                continue
            sims = part.mat[rows] @ q
            take = min(limit, len(sims))
            top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else range(take)
            found.extend((float(sims[i]), int(part.rowids[rows[i]])) for i in top)
        found.sort(key=lambda r: (-r[0], r[1]))
        found = found[:limit]
        if not found:
            return []
        scores = {rowid: score for score, rowid in found}
        with self._reading() as c:
            rows_ = c.execute(
                f"SELECT c.rowid, {_HIT_COLS} FROM knowledge_chunks c {_HIT_JOIN}"
                f" WHERE c.rowid IN ({qs(list(scores))})",
                list(scores),
            ).fetchall()
        hits = [_hit(r[1:], scores[r[0]], "vector") for r in rows_]
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits

    def _knowledge_matrix(self, namespace: str, model: str) -> _Matrix | None:
        """The namespace's cached chunk vectors from ``model``, reloaded when stale."""
        seq = self.get_meta(f"knowledge_seq:{namespace}")
        if seq is None:
            return None
        with _CACHE_LOCK:
            if self._kcache is None:
                self._kcache = {}
            part = self._kcache.get((namespace, model))
            if part is not None and part.seq == seq:
                return part
            # ``seq`` was read before the rows: a write in between only causes one more reload
            with self._reading() as c:
                rows = c.execute(
                    "SELECT rowid, collection, embedding FROM knowledge_chunks"
                    " WHERE namespace = ? AND embedding_model = ? AND embedding IS NOT NULL"
                    " ORDER BY rowid",
                    (namespace, model),
                ).fetchall()
            part = _matrix(seq, rows)
            self._kcache[(namespace, model)] = part
            return part


def _matrix(seq: str, rows: list[Any]) -> _Matrix:
    if not rows:
        empty = np.zeros((0, 0), np.float32)
        return _Matrix(seq, np.zeros(0, np.int64), np.array([], dtype=np.str_), empty)
    blob = b"".join(bytes(r[2]) for r in rows)
    dim = len(rows[0][2]) // 4
    if len(blob) != dim * 4 * len(rows):
        raise EmbeddingModelError("knowledge chunk vectors of one model differ in dimension")
    mat = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), dim)
    return _Matrix(
        seq,
        np.array([r[0] for r in rows], np.int64),
        np.array([r[1] for r in rows], dtype=np.str_),
        mat,
    )
