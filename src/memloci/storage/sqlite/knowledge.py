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

from memloci.errors import EmbeddingModelError
from memloci.models import KnowledgeHit, KnowledgeSource
from memloci.storage.sql.knowledge import HIT_COLS as _HIT_COLS
from memloci.storage.sql.knowledge import HIT_JOIN as _HIT_JOIN
from memloci.storage.sql.knowledge import Names, SQLKnowledge, Vector
from memloci.storage.sql.knowledge import hit_from_row as _hit
from memloci.storage.sqlite.base import IntegrityError, SQLiteDatabase, qs

_CACHE_LOCK = threading.Lock()  # guards every store's knowledge cache (reloads are rare)


@dataclass
class _Matrix:
    """The cached vectors of one (namespace, model): rowids, collections, unit rows."""

    seq: str
    rowids: npt.NDArray[np.int64]
    collections: npt.NDArray[np.str_]
    mat: npt.NDArray[np.float32]


class SQLiteKnowledge(SQLKnowledge[SQLiteDatabase]):
    """Knowledge sources and chunks on SQLite (see the module docstring)."""

    _kcache: dict[tuple[str, str], _Matrix] | None = None

    chunk_tail = ("embedding",)
    constraint_errors = (IntegrityError,)

    def _chunk_tail(
        self, source: KnowledgeSource, vector: npt.NDArray[np.float32] | None
    ) -> tuple[Any, ...]:
        return (None if vector is None else np.ascontiguousarray(vector, np.float32).tobytes(),)

    def _knowledge_changed(self, c: Any, namespace: str) -> None:
        self.db.bump(c, f"knowledge_seq:{namespace}")

    # ------------------------------------------------------------------ search
    def _knowledge_fulltext(
        self, namespaces: Sequence[str], match: str, limit: int, collections: Names
    ) -> list[KnowledgeHit]:
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
        rows = self.db.select_match(sql, [match, *params, limit])
        return [_hit(r, -float(r[-1]), "fulltext") for r in rows]

    def _knowledge_vectors(
        self, namespaces: Sequence[str], q: Vector, model: str, limit: int, collections: Names
    ) -> list[KnowledgeHit]:
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
        with self.db.reading() as c:
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
        seq = self.db.get_meta(f"knowledge_seq:{namespace}")
        if seq is None:
            return None
        with _CACHE_LOCK:
            if self._kcache is None:
                self._kcache = {}
            part = self._kcache.get((namespace, model))
            if part is not None and part.seq == seq:
                return part
            # ``seq`` was read before the rows: a write in between only causes one more reload
            with self.db.reading() as c:
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
