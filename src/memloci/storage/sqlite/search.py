"""SQLite search primitives and the embedding slow path (layer: storage).

Scores are higher-is-better: FTS5 returns ``-bm25``, vectors return cosine
similarity, key search returns 1.0 / 0.8 / 0.6 for exact / prefix / contained.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memloci.errors import EmbeddingModelError, StorageError
from memloci.storage import faults
from memloci.storage.base import NodeFilter, PendingEmbedding
from memloci.storage.rows import owner_match
from memloci.storage.sql.search import SQLSearch
from memloci.storage.sqlfilter import filter_sql
from memloci.storage.sqlite.base import DatabaseError, OperationalError, SQLiteDatabase
from memloci.storage.sqlite.terms import TermStats
from memloci.storage.sqlite.vecindex import VectorIndex

# FTS5 column weights: content, speaker, previous turn, next turn, date words, key + subject.
# Neighbouring turns matter because a question often matches one turn while the answer is
# the short reply next to it ("Super good!"); dates let "in May 2023" match that session.
FTS_WEIGHTS = (1.0, 0.4, 0.5, 0.25, 0.5, 1.0, 0.0)  # last: owner tokens, never ranked


class SQLiteSearch(SQLSearch[SQLiteDatabase]):
    """Full text, vectors, fuzzy keys and the embedding queue on SQLite."""

    # ------------------------------------------------------------------ embeddings
    def save_embeddings(
        self, items: Sequence[PendingEmbedding], vectors: npt.NDArray[np.float32]
    ) -> int:
        """Store vectors for nodes whose content is unchanged; returns how many were saved."""
        if self.db._dim is None:
            raise EmbeddingModelError("no embedder is bound to this store")
        if len(items) != len(vectors) or (len(items) and vectors.shape[1] != self.db._dim):
            raise EmbeddingModelError(
                f"expected {len(items)} vectors of dimension {self.db._dim}, got {vectors.shape}"
            )
        saved = 0
        with self.db.tx() as c:
            seq = self.db.bump(c, "vec_seq") * 1_000_000
            for i, (item, vec) in enumerate(zip(items, vectors, strict=True)):
                row = c.execute(
                    "SELECT rowid FROM nodes WHERE id = ? AND content_hash = ? AND +embedded = 0",
                    (item.id, item.content_hash),
                ).fetchone()
                if row is None:
                    continue
                blob = np.ascontiguousarray(vec, dtype=np.float32).tobytes()
                c.execute(
                    "INSERT OR REPLACE INTO node_vectors (rowid, embedding) VALUES (?, ?)",
                    (row[0], blob),
                )
                c.execute("UPDATE nodes SET embedded = ? WHERE rowid = ?", (seq + i + 1, row[0]))
                saved += 1
        return saved

    def vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, bytes]:
        """Stored float32 vectors (raw bytes) of the given nodes that have a current one
        (not a vector of content since edited, waiting to be embedded again)."""
        if self.db._dim is None or not ids:
            return {}
        out: dict[str, bytes] = {}
        size = self.db._dim * 4
        with self.db.reading() as c:
            # CROSS JOIN: look ids up through the unique index, whatever the statistics say
            for node_id, blob in c.execute(
                "SELECT n.id, v.embedding FROM json_each(?) j CROSS JOIN nodes n ON n.id = j.value"
                " CROSS JOIN node_vectors v ON v.rowid = n.rowid"
                " WHERE +n.namespace = ? AND n.embedded > 0",
                [json.dumps(list(ids)), namespace],
            ):
                if len(blob) == size:
                    out[node_id] = bytes(blob)
                else:  # damaged: as if not embedded (``memloci doctor --repair`` re-embeds)
                    self._bad_vector(f"memory {node_id}", len(blob))
        return out

    def _bad_vector(self, which: str, size: int) -> None:
        faults.damaged(
            self.db.path,
            "vectors",
            f"{which}: {size} bytes, not {self.db._dim or 0} float32 values",
        )

    def _sound(self, rows: list[Any]) -> list[Any]:
        """The vector-cache rows (``rowid, embedding, …``) whose vector has the store's
        dimension; a damaged one is left out (and reported) instead of failing search."""
        size = (self.db._dim or 0) * 4
        good = [r for r in rows if len(r[1]) == size]
        if len(good) < len(rows):
            bad = next(r for r in rows if len(r[1]) != size)
            self._bad_vector(f"the vector of row {bad[0]}", len(bad[1]))
        return good

    def reset_embeddings(self) -> int:
        """Forget every vector and the bound model (for re-embedding with another one)."""
        with self.db.tx() as c:
            c.execute("DELETE FROM node_vectors")
            c.execute("DELETE FROM meta WHERE key IN ('embedding_model', 'dimension')")
            count = c.execute("UPDATE nodes SET embedded = 0 WHERE embedded <> 0").rowcount
            self.db.bump(c, "vec_epoch")
        self.db._dim = None
        self.db._index = None
        return int(count)

    # ------------------------------------------------------------------ full text
    def fulltext(self, flt: NodeFilter, match: str, limit: int) -> list[tuple[str, float]]:
        if not match.strip() or not flt.namespaces:
            return []
        where, params = filter_sql(flt)
        # narrow the match to the caller's namespaces and user inside FTS5 itself
        match = f"({match}) AND {owner_match(flt.namespaces, flt.user)}"
        weights = ", ".join(str(w) for w in FTS_WEIGHTS)
        # CROSS JOIN keeps FTS5 as the outer loop: one index probe, then filter matches
        sql = (
            f"SELECT n.id, bm25(nodes_fts, {weights}) AS r FROM nodes_fts"
            " CROSS JOIN nodes n ON n.rowid = nodes_fts.rowid"
            f" WHERE nodes_fts MATCH ? AND {where} ORDER BY r LIMIT ?"
        )
        try:
            rows = self.db.select_match(sql, [match, *params, limit])
        except StorageError as exc:
            self._fulltext_damaged(exc)
            return []
        return [(r[0], -float(r[1])) for r in rows]

    def _fulltext_damaged(self, exc: StorageError) -> None:
        """A damaged full-text index: searches go on by meaning alone, reported once
        (``memloci doctor --repair`` rebuilds it); any other failure is raised."""
        text = exc.message.lower()
        if not isinstance(exc.__cause__, DatabaseError) or not (
            "corrupt" in text or "malformed" in text
        ):
            raise exc
        try:  # the memories themselves must read: a damaged table is no index fault
            with self.db.reading() as c:
                c.execute("SELECT count(*) FROM (SELECT id FROM nodes LIMIT 1)").fetchone()
                c.execute("SELECT max(rowid) FROM nodes").fetchone()
        except StorageError:
            raise exc from None
        faults.damaged(self.db.path, "full-text index", exc.message)

    @functools.cached_property
    def _term_stats(self) -> TermStats:
        return TermStats()

    def match_weight(self, match: str) -> float:
        if not match.strip():
            return 0.0
        try:
            with self.db.reading() as c:
                return self._term_stats.weight(c, match)
        except OperationalError:  # no full-text index yet, or no vocabulary view
            return 0.0
        except StorageError as exc:
            self._fulltext_damaged(exc)
            return 0.0

    def unseen(self, words: Sequence[str]) -> list[str]:
        if not words:
            return []
        try:
            with self.db.reading() as c:
                return self._term_stats.unseen(c, words)
        except OperationalError:  # no full-text index yet, or no vocabulary view
            return []
        except StorageError as exc:
            self._fulltext_damaged(exc)
            return []

    # ------------------------------------------------------------------ keys
    # ------------------------------------------------------------------ vectors
    def _sync_index(self, namespaces: Sequence[str]) -> VectorIndex | None:
        if self.db._dim is None:
            return None
        if self.db.in_tx():  # may read this transaction's own vectors: drop them on rollback
            self.db._index_in_tx = True
        with self.db.reading() as c:
            meta = dict(
                c.execute(
                    "SELECT key, value FROM meta WHERE key IN ('vec_seq', 'vec_epoch')"
                ).fetchall()
            )
            epoch, seq = meta.get("vec_epoch", "0"), int(meta.get("vec_seq", "0")) * 1_000_000
            if self.db._index is None or epoch != self.db._index_epoch:
                self.db._index = VectorIndex(self.db._dim)
                self.db._index_epoch, self.db._index_seq = epoch, 0
            index = self.db._index
            fresh = [ns for ns in namespaces if not index.loaded(ns)]
            cols = "n.rowid, v.embedding, n.scope, n.user_id, n.type"
            join = "FROM nodes n CROSS JOIN node_vectors v ON v.rowid = n.rowid"
            if seq > self.db._index_seq:
                rows: dict[str, list[Any]] = {}
                for r in c.execute(
                    f"SELECT n.namespace, {cols} {join} WHERE n.embedded > ? ORDER BY n.embedded",
                    (self.db._index_seq + 999_999,) if self.db._index_seq else (0,),
                ):
                    if index.loaded(r[0]):
                        rows.setdefault(r[0], []).append(r[1:])
                for ns, part in rows.items():
                    index.append(ns, self._sound(sorted(part)))
                self.db._index_seq = seq
            for ns in fresh:
                cursor = c.execute(
                    f"SELECT {cols} {join} WHERE n.namespace = ? AND n.embedded > 0"
                    " AND n.embedded <= ? ORDER BY n.rowid",
                    (ns, self.db._index_seq + 999_999),
                )
                index.append(ns, [])  # mark loaded, even when empty
                while rows := cursor.fetchmany(25_000):  # bounded transient memory
                    index.append(ns, self._sound(rows))
        return index

    def vector_search(
        self, flt: NodeFilter, query: npt.NDArray[np.float32], limit: int
    ) -> list[tuple[str, float]]:
        if self.db._dim is None:
            return []
        if query.shape != (self.db._dim,):
            raise EmbeddingModelError(
                f"query vector has shape {query.shape}, the store holds {self.db._dim}-d vectors"
            )
        # readers sync the cache one at a time; writers never wait. In memory the one
        # connection's lock is taken first, so a transaction searching cannot deadlock.
        with self.db._wlock if self.db._memory else contextlib.nullcontext(), self.db._index_lock:
            index = self._sync_index(flt.namespaces)
        if index is None:
            return []
        types = [t.value for t in flt.types] if flt.types else None
        want = limit * 4 + 20
        cands, truncated = index.search(flt.namespaces, query, want, user=flt.user, types=types)
        sims = dict(cands)
        where, params = filter_sql(flt)
        keep: list[tuple[str, float]] = []
        with self.db.reading() as c:
            # the closest candidates first: the cache's masks already applied the user and
            # the types, so most pass and the rest are rarely read (each costs a row probe)
            first = limit + limit // 2 + 10
            for batch in (cands[:first], cands[first:]):
                if not batch or len(keep) >= limit:
                    break
                # CROSS JOIN: probe candidates by rowid, then filter (never scan the namespace)
                for rowid, node_id in c.execute(
                    "SELECT n.rowid, n.id FROM json_each(?) j CROSS JOIN nodes n"
                    f" ON n.rowid = j.value WHERE n.embedded > 0 AND {where}",  # pending: stale
                    [json.dumps([r for r, _ in batch]), *params],
                ):
                    keep.append((node_id, sims[rowid]))
            if len(keep) < limit and truncated:
                # the cheap masks were not selective enough: exact scan of the filtered set
                blob = np.ascontiguousarray(query, dtype=np.float32).tobytes()
                # a damaged vector (another size) is skipped: the cache left it out too
                rows = c.execute(
                    "SELECT n.id, vec_distance_cosine(v.embedding, ?) AS d FROM nodes n"
                    " JOIN node_vectors v ON v.rowid = n.rowid"
                    f" WHERE length(v.embedding) = ? AND {where} ORDER BY d LIMIT ?",
                    [blob, len(blob), *params, limit],
                ).fetchall()
                keep = [(r[0], 1.0 - float(r[1])) for r in rows]
        keep.sort(key=lambda r: -r[1])
        return keep[:limit]
