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

from memloci.errors import EmbeddingModelError
from memloci.models import KnowledgeHit, KnowledgeSource
from memloci.storage.postgres.base import PostgresDatabase
from memloci.storage.postgres.ranking import ranked
from memloci.storage.postgres.tsquery import is_disjunction, to_tsquery_sql
from memloci.storage.sql.knowledge import HIT_COLS as _HIT_COLS
from memloci.storage.sql.knowledge import HIT_JOIN as _HIT_JOIN
from memloci.storage.sql.knowledge import Names, SQLKnowledge, Vector
from memloci.storage.sql.knowledge import hit_from_row as _hit

# FTS5 column weights of the SQLite knowledge index: text, heading path, source title
CHUNK_WEIGHTS = {"A": 1.0, "B": 0.5, "C": 0.3}


class PostgresKnowledge(SQLKnowledge[PostgresDatabase]):
    """Knowledge sources and chunks on PostgreSQL (see the module docstring)."""

    chunk_tail = ("title", "embedding")

    @staticmethod
    def _chunk_tail(
        source: KnowledgeSource, vector: npt.NDArray[np.float32] | None
    ) -> tuple[Any, ...]:
        return (source.title, None if vector is None else np.ascontiguousarray(vector, np.float32))

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

    def _knowledge_fulltext(
        self, namespaces: Sequence[str], match: str, limit: int, collections: Names
    ) -> list[KnowledgeHit]:
        tsq, tparams = to_tsquery_sql(match)
        where, params = self._scope(namespaces, collections)
        with self.db.reading() as c:
            found = ranked(
                c,
                self.db._terms,
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

    def _knowledge_vectors(
        self, namespaces: Sequence[str], q: Vector, model: str, limit: int, collections: Names
    ) -> list[KnowledgeHit]:
        where, params = self._scope(namespaces, collections)
        with self.db.reading() as c:
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
