"""PostgreSQL knowledge tier (layer: storage): read-only RAG sources, their chunks and search.

Chunk vectors live in ``knowledge_chunks.embedding`` (pgvector, any dimension: rows are
filtered by namespace and model before any distance is computed, then scanned exactly;
knowledge bases are small next to the memories). Full text uses the generated ``fts``
column (text A, heading B, source title C). Scores are higher-is-better: cosine
similarity for vectors, BM25 on the FTS5 scale for full text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memloci.errors import EmbeddingModelError, ValidationError
from memloci.models import KnowledgeChunk, KnowledgeHit, KnowledgeSource
from memloci.storage.postgres.base import PostgresBase
from memloci.storage.postgres.ranking import ranked
from memloci.storage.postgres.tsquery import is_disjunction, to_tsquery_sql
from memloci.storage.rows import dt
from memloci.storage.sqlfilter import ts

_SOURCE_COLS = (
    "id, namespace, collection, path, title, content_hash, mtime, size_bytes, chunk_count,"
    " embedding_model, added_at, updated_at"
)
_CHUNK_COLS = (
    "id, namespace, source_id, collection, ordinal, text, heading, start_char, end_char,"
    " embedding_model"
)
_HIT_COLS = (
    "c.id, c.text, c.heading, c.source_id, s.path, s.title, c.collection, c.namespace, c.ordinal"
)
_HIT_JOIN = "JOIN knowledge_sources s ON s.namespace = c.namespace AND s.id = c.source_id"
# FTS5 column weights of the SQLite knowledge index: text, heading path, source title
CHUNK_WEIGHTS = {"A": 1.0, "B": 0.5, "C": 0.3}


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


class PostgresKnowledge(PostgresBase):
    """Knowledge sources and chunks on PostgreSQL (see the module docstring)."""

    # ------------------------------------------------------------------ reads
    def knowledge_source(self, namespace: str, source_id: str) -> KnowledgeSource | None:
        with self._reading() as c:
            row = c.execute(
                f"SELECT {_SOURCE_COLS} FROM knowledge_sources WHERE namespace = %s AND id = %s",
                (namespace, source_id),
            ).fetchone()
        return None if row is None else _source(row)

    def knowledge_sources(
        self, namespace: str, *, collection: str | None = None
    ) -> list[KnowledgeSource]:
        sql = f"SELECT {_SOURCE_COLS} FROM knowledge_sources WHERE namespace = %s"
        params: list[Any] = [namespace]
        if collection is not None:
            sql += " AND collection = %s"
            params.append(collection)
        with self._reading() as c:
            rows = c.execute(sql + " ORDER BY collection, path", params).fetchall()
        return [_source(r) for r in rows]

    def knowledge_chunks(self, namespace: str, source_id: str) -> list[KnowledgeChunk]:
        with self._reading() as c:
            rows = c.execute(
                f"SELECT {_CHUNK_COLS} FROM knowledge_chunks WHERE namespace = %s"
                " AND source_id = %s ORDER BY ordinal",
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
        ns = source.namespace
        with self._tx() as c:
            self._xlock(c, f"knowledge:{ns}:{source.id}")
            c.execute(
                "DELETE FROM knowledge_chunks WHERE namespace = %s AND source_id = %s",
                (ns, source.id),
            )
            c.execute(
                f"INSERT INTO knowledge_sources ({_SOURCE_COLS})"
                f" VALUES ({', '.join(['%s'] * 12)})"
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
            c.cursor().executemany(
                f"INSERT INTO knowledge_chunks ({_CHUNK_COLS}, title, embedding)"
                f" VALUES ({', '.join(['%s'] * 12)})",
                [
                    (
                        ch.id, ns, source.id, source.collection, ch.ordinal, ch.text, ch.heading,
                        ch.start_char, ch.end_char, model, source.title,
                        None if vectors is None
                        else np.ascontiguousarray(vectors[i], dtype=np.float32),
                    )
                    for i, ch in enumerate(chunks_)
                ],
            )  # fmt: skip

    def delete_knowledge(self, namespace: str, source_ids: Sequence[str]) -> int:
        """Delete sources with their chunks; returns how many sources were deleted."""
        ids = list(dict.fromkeys(source_ids))
        if not ids:
            return 0
        with self._tx() as c:
            c.execute(
                "DELETE FROM knowledge_chunks WHERE namespace = %s AND source_id = ANY(%s)",
                (namespace, ids),
            )
            return int(
                c.execute(
                    "DELETE FROM knowledge_sources WHERE namespace = %s AND id = ANY(%s)",
                    (namespace, ids),
                ).rowcount
            )

    # ------------------------------------------------------------------ search
    @staticmethod
    def _scope(
        namespaces: Sequence[str], collections: Sequence[str] | None
    ) -> tuple[str, list[Any]]:
        where, params = "c.namespace = ANY(%s)", [list(namespaces)]
        if collections is not None:
            where += " AND c.collection = ANY(%s)"
            params.append(list(collections))
        return where, params

    def knowledge_fulltext(
        self,
        namespaces: Sequence[str],
        match: str,
        *,
        limit: int,
        collections: Sequence[str] | None = None,
    ) -> list[KnowledgeHit]:
        """Chunks matching an FTS5-syntax expression, best first (BM25, FTS5 scale)."""
        if not match.strip() or not namespaces or collections == []:
            return []
        tsq, tparams = to_tsquery_sql(match)
        where, params = self._scope(namespaces, collections)
        with self._reading() as c:
            found = ranked(
                c,
                self._terms,
                table="knowledge_chunks",
                key="seq",
                tsq=tsq,
                tparams=tparams,
                texts=tparams,
                whole_needed=not is_disjunction(match),
                where=where.replace("c.", "n."),
                params=params,
                limit=limit,
                weights=CHUNK_WEIGHTS,
            )
            if not found:
                return []
            rows = c.execute(
                f"SELECT c.seq, {_HIT_COLS} FROM knowledge_chunks c {_HIT_JOIN}"
                " WHERE c.seq = ANY(%s)",
                ([seq for seq, _ in found],),
            ).fetchall()
        by_seq = {r[0]: r[1:] for r in rows}
        return [_hit(by_seq[seq], score, "fulltext") for seq, score in found if seq in by_seq]

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
        where, params = self._scope(namespaces, collections)
        with self._reading() as c:
            dims = c.execute(
                "SELECT DISTINCT vector_dims(c.embedding) FROM knowledge_chunks c"
                f" WHERE {where} AND c.embedding_model = %s AND c.embedding IS NOT NULL",
                [*params, model],
            ).fetchall()
            if not dims:
                return []
            if q.ndim != 1 or any(d[0] != q.shape[0] for d in dims):
                raise EmbeddingModelError(
                    f"query vector has shape {q.shape}, knowledge chunks from {model!r} are "
                    f"{dims[0][0]}-d"
                )
            # the distance is taken on a materialised, filtered set: never on another model
            rows = c.execute(
                f"WITH m AS MATERIALIZED (SELECT c.seq, c.embedding FROM knowledge_chunks c"
                f" WHERE {where} AND c.embedding_model = %s AND c.embedding IS NOT NULL)"
                f" SELECT {_HIT_COLS}, m.embedding <=> %s AS d FROM m"
                f" JOIN knowledge_chunks c ON c.seq = m.seq {_HIT_JOIN}"
                " ORDER BY d, c.id LIMIT %s",
                [*params, model, q, limit],
            ).fetchall()
        hits = [_hit(r, 1.0 - float(r[-1]), "vector") for r in rows]
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits
