"""PostgreSQL search primitives and the embedding slow path (layer: storage).

Scores are higher-is-better: full text returns BM25 on the FTS5 scale over the weighted
``nodes.fts`` vector (content and key + subject A, previous turn and date words B,
speaker C, next turn D; see :mod:`memloci.storage.postgres.ranking`), vectors return
cosine similarity from the pgvector HNSW index (iterative scans on, so a filtered search
still fills its limit; one user's search ranks a 1-bit pre-selection exactly), key
search returns 1.0 / 0.8 / 0.6 for exact / prefix / contained. No rows are cached in the
process: a write by any server is seen by the next search of every other one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memloci.errors import EmbeddingModelError, ValidationError
from memloci.storage.base import NodeFilter, PendingEmbedding
from memloci.storage.postgres.base import PostgresDatabase, _f32
from memloci.storage.postgres.ranking import ranked, unseen, weight
from memloci.storage.postgres.tsquery import is_disjunction, to_tsquery_sql
from memloci.storage.sql.search import SQLSearch
from memloci.storage.sqlfilter import filter_sql

# column weights of the FTS5 index, by tsvector weight letter: A content + key/subject,
# B previous turn + date words, C speaker, D next turn
NODE_WEIGHTS = {"A": 1.0, "B": 0.5, "C": 0.4, "D": 0.25}
# one user's vector search ranks exactly the rows nearest by Hamming distance on their
# 1-bit codes: at least this many, or this many times the limit (recall: bench/README.md;
# 400 left recall@10 at 0.998 at 100k turns, 600 at 0.9995)
PRESELECT_MIN = 1000
PRESELECT_FACTOR = 8
# a search across a namespace (no user) walks the HNSW graph with pgvector's widest
# candidate list, set for its own transaction: recall@10 0.963 -> 0.969 at 100k turns
# (800, the connections' default, stays for the rest); m=48 / ef_construction=256 and
# an exact re-rank of a wider HNSW result added nothing (bench/README.md, "Scale", round 5)
NAMESPACE_EF_SEARCH = 1000


class PostgresSearch(SQLSearch[PostgresDatabase]):
    """Full text, vectors, fuzzy keys and the embedding queue on PostgreSQL."""

    def _dimension(self) -> int | None:
        """The bound vector dimension (re-read while unknown: another server may bind)."""
        if self.db._dim is None:
            dim = self.db.get_meta("dimension")
            self.db._dim = int(dim) if dim else None
        return self.db._dim

    # ------------------------------------------------------------------ embeddings
    def save_embeddings(
        self, items: Sequence[PendingEmbedding], vectors: npt.NDArray[np.float32]
    ) -> int:
        """Store vectors for nodes whose content is unchanged; returns how many were saved."""
        dim = self._dimension()
        if dim is None:
            raise EmbeddingModelError("no embedder is bound to this store")
        if len(items) != len(vectors) or (len(items) and vectors.shape[1] != dim):
            raise EmbeddingModelError(
                f"expected {len(items)} vectors of dimension {dim}, got {vectors.shape}"
            )
        with self.db.tx() as c:
            cur = c.cursor()
            # one pipelined round of updates; rowcount sums them (rows edited meanwhile
            # changed their content hash or were re-queued, and are skipped)
            cur.executemany(
                "UPDATE nodes SET embedding = %b, embedded = 1"
                " WHERE id = %s AND content_hash = %s AND embedded = 0",
                [
                    (np.ascontiguousarray(vec, dtype=np.float32), item.id, item.content_hash)
                    for item, vec in zip(items, vectors, strict=True)
                ],
            )
            saved = max(0, int(cur.rowcount))
        return saved

    def vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, bytes]:
        """Stored float32 vectors (raw bytes) of the given nodes that have one."""
        if not ids:
            return {}
        with self.db.reading() as c:
            rows = c.execute(
                "SELECT id, embedding FROM nodes WHERE namespace = %s AND id = ANY(%s)"
                " AND embedding IS NOT NULL AND embedded > 0",
                (namespace, list(ids)),
            ).fetchall()
        # pgvector >= 0.5 loads a Vector object, older versions a numpy array
        return {r[0]: _f32(r[1]) for r in rows}

    def reset_embeddings(self) -> int:
        """Forget every vector and the bound model (for re-embedding with another one)."""
        with self.db.tx() as c:
            self.db.xlock(c, "embedder")
            self.db.unbind_vectors(c)
            count = c.execute("UPDATE nodes SET embedded = 0 WHERE embedded <> 0").rowcount
        self.db._dim = None
        return int(count)

    # ------------------------------------------------------------------ full text
    def fulltext(self, flt: NodeFilter, match: str, limit: int) -> list[tuple[str, float]]:
        if not match.strip() or not flt.namespaces or limit < 1:
            return []
        where, params = filter_sql(flt, ph="%s")
        return ranked_nodes(self.db, flt, match, where, params, limit)

    def match_weight(self, match: str) -> float:
        if not match.strip():
            return 0.0
        try:
            _, texts = to_tsquery_sql(match)
        except ValidationError:
            return 0.0
        with self.db.reading() as c:
            return weight(c, self.db._terms, "nodes", texts)

    def unseen(self, words: Sequence[str]) -> list[str]:
        if not words:
            return []
        with self.db.reading() as c:
            return unseen(c, self.db._terms, "nodes", words)

    # ------------------------------------------------------------------ keys
    # ------------------------------------------------------------------ vectors
    def vector_search(
        self, flt: NodeFilter, query: npt.NDArray[np.float32], limit: int
    ) -> list[tuple[str, float]]:
        dim = self._dimension()
        if dim is None or not flt.namespaces or limit < 1:
            return []
        if query.shape != (dim,):
            raise EmbeddingModelError(
                f"query vector has shape {query.shape}, the store holds {dim}-d vectors"
            )
        q = np.ascontiguousarray(query, dtype=np.float32)
        where, params = filter_sql(flt, ph="%s")
        sql = (
            "SELECT n.id, n.embedding <=> %s AS d FROM nodes n"
            f" WHERE n.embedding IS NOT NULL AND n.embedded > 0 AND {where}"
            " ORDER BY {order} LIMIT %s"
        )
        owner = _owner_rows(flt)
        with self.db.reading() as c:
            if owner is not None:
                # one user's search: the rows closest by Hamming distance on their 1-bit
                # codes (node_bits, index-only), then ranked exactly under the full filter
                branches, bparams = owner
                pre = max(PRESELECT_MIN, PRESELECT_FACTOR * limit)
                rows = c.execute(
                    "SELECT n.id, n.embedding <=> %s AS d FROM nodes n WHERE n.seq IN"
                    f" (SELECT p.seq FROM ({' UNION ALL '.join(branches)}) p"
                    "  ORDER BY p.bits <~> binary_quantize(%s) LIMIT %s)"
                    f" AND n.embedding IS NOT NULL AND n.embedded > 0 AND {where}"
                    " ORDER BY d LIMIT %s",
                    [q, *bparams, q, pre, *params, limit],
                ).fetchall()
            else:
                # BEGIN, SET LOCAL and the search in one round trip, COMMIT in another
                with c.pipeline(), c.transaction():
                    c.execute(f"SET LOCAL hnsw.ef_search = {NAMESPACE_EF_SEARCH}")
                    order = sql.format(order="n.embedding <=> %s")
                    rows = c.execute(order, [q, *params, q, limit]).fetchall()
            if len(rows) < limit:
                # an index scan stops after hnsw.max_scan_tuples, and the pre-selection
                # may hold too few rows that pass the rest of the filter: when either left
                # it short, rank the filtered rows exactly ("+ 0" keeps the planner off
                # the HNSW index)
                exact = sql.format(order="(n.embedding <=> %s) + 0")
                rows = c.execute(exact, [q, *params, q, limit]).fetchall()
        # relaxed_order iterative scans may return neighbours slightly out of order
        out = [(r[0], 1.0 - float(r[1])) for r in rows]
        out.sort(key=lambda r: -r[1])
        return out


def owner_conditions(flt: NodeFilter) -> list[tuple[str, list[Any]]]:
    """Full-text candidate branches for a filter (see ``ranked``'s ``owners``): one
    user's search looks at that user's rows (``user_id = %s``: the ``(user_id, fts)``
    GIN index finds the rows holding a word *and* owned by the user, instead of
    intersecting a bitmap of everyone's rows holding it with one of all the user's
    rows) and, apart, at the shared ones (few; their own partial index)."""
    if flt.user is None or flt.owner_user is not None:
        return [("", [])]
    return [(" AND n.user_id = %s", [flt.user]), (" AND n.scope <> 'user'", [])]


def namespace_scope(flt: NodeFilter) -> tuple[str, list[Any]]:
    """The filter's namespaces as a condition (``ranked``'s ``scope``)."""
    return f"n.namespace IN ({', '.join(['%s'] * len(flt.namespaces))})", list(flt.namespaces)


def _owner_rows(flt: NodeFilter) -> tuple[list[str], list[Any]] | None:
    """The ``node_bits`` branches holding every row one user's search may see (``None``
    unless the filter names a user): that user's rows, plus the shared ones."""
    if not flt.namespaces:
        return None
    ns = ", ".join(["%s"] * len(flt.namespaces))
    base = f"SELECT b.seq, b.bits FROM node_bits b WHERE b.namespace IN ({ns})"
    if flt.owner_user is not None:
        return [f"{base} AND b.user_id = %s"], [*flt.namespaces, flt.owner_user]
    if flt.user is None:
        return None
    return (
        [f"{base} AND b.user_id = %s", f"{base} AND b.shared AND b.user_id IS DISTINCT FROM %s"],
        [*flt.namespaces, flt.user, *flt.namespaces, flt.user],
    )


def ranked_nodes(
    db: PostgresDatabase,
    flt: NodeFilter,
    match: str,
    where: str,
    params: Sequence[Any],
    limit: int,
) -> list[tuple[str, float]]:
    """``(id, bm25)`` of the best ``limit`` memories matching ``match`` (tsquery syntax)
    that pass ``where`` (``flt``'s conditions and any the caller adds), best first."""
    tsq, tparams = to_tsquery_sql(match)
    with db.reading() as c:
        found = ranked(
            c,
            db._terms,
            table="nodes",
            key="id",
            tsq=tsq,
            tparams=tparams,
            texts=tparams,
            whole_needed=not is_disjunction(match),
            where=where,
            params=params,
            limit=limit,
            weights=NODE_WEIGHTS,
            owners=owner_conditions(flt),
            scope=namespace_scope(flt),
        )
    return [(str(i), s) for i, s in found]
