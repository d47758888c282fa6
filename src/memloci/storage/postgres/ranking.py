"""BM25 over PostgreSQL ``tsvector`` columns (layer: storage).

The retrieval layer reads full-text scores on the FTS5 ``-bm25`` scale (its fusion divides
by the best score plus one "idf unit", and counts on IDF to make a word found in most
memories worth almost nothing). ``ts_rank_cd`` has no IDF and a different scale, so the
PostgreSQL store ranks like FTS5 instead:

1. candidates: for each query lexeme, the best rows holding it (``ts_rank_cd`` order;
   the newest for a lexeme in half the rows or more, which BM25 scores ~0, or, in a table
   of more than ``BIG_TABLE`` rows, in more than ``RANKED_SHARE`` of them: ranking them
   all would cost more than its low IDF can add to the order — and on such a table only
   when no rarer lexeme is ranked, and then among the owner's newest ``RECENT_ROWS``
   rows, read newest first from an index: sorting every one of a user's rows holding a
   common word cost 10-20 ms a word at 1M rows), plus the best
   rows for the whole query unless it is single words joined by OR; rows must match the
   whole query (``@@``), pass the caller's SQL filter, and are bounded in number. A
   branch ranks at most ``SCAN_CAP`` rows holding its lexeme (a person's name is in
   thousands of their own memories yet rare in the table: ranking them all cost 25 ms
   at 1M rows; the rows that also hold other query words come from those words'
   branches), and one user's search runs each branch on that user's rows and on the
   shared rows apart (``owners``), so the owner-keyed GIN index (migration 7) finds the
   rows holding a word *and* owned by the user without a bitmap of everyone's;
2. score: Okapi BM25 as FTS5 computes it — ``idf = ln((N − df + 0.5) / (df + 0.5))``
   (at least 1e-6) over the whole table, term frequency weighted by the column weight
   of each occurrence (the tsvector weight letters A–D), ``k1 = 1.2``, ``b = 0.75``,
   document length = tokens in the row.

``N`` and per-lexeme document frequencies are counted through the GIN index and cached
per process for a minute (they drift slowly; a cached figure only nudges scores, never
hides or shows a row). Above ``BIG_TABLE`` rows, ``N`` is the planner's estimate, the
frequency of a lexeme ANALYZE lists among the most common is taken from ``pg_stats``,
and the count of any other stops at the rarest listed one's: no search reads every row
holding a common word just to learn that it is common.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memloci.storage.rows import bm25_idf

K1, B = 1.2, 0.75
STATS_TTL = 60.0  # seconds a count of rows / of rows holding a lexeme is reused
PER_LEXEME = 30  # candidates per query lexeme (and for the whole query), at least
BIG_TABLE = 50_000  # above: row count from the planner, common lexemes from ANALYZE
RANKED_SHARE = 0.02  # above BIG_TABLE, a lexeme in more rows than this share is not ranked
COMMON_IDF = 1e-3  # a lexeme at or below this IDF is in half the rows or more
SCAN_CAP = 1000  # rows holding a lexeme that one candidate branch ranks, at most
RECENT_ROWS = 500  # big table, common lexemes only: the owner's newest rows looked at


class TermStats:
    """Cached ``N`` and document frequencies per (table, lexeme); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], tuple[float, int]] = {}
        self._mce: dict[str, tuple[float, dict[str, float]]] = {}
        self._lexemes: dict[str, list[str]] = {}  # query text -> its lexemes (pure)

    def lexemes(self, c: Any, texts: Sequence[str]) -> list[str]:
        """:func:`lexemes_of`, remembered per text (the text search configuration only
        changes with a migration): a search's full-text list and its query weight
        parse the query once."""
        text = " ".join(texts)
        with self._lock:
            found = self._lexemes.get(text)
        if found is None:
            found = lexemes_of(c, texts)
            with self._lock:
                if len(self._lexemes) > 4096:
                    self._lexemes.clear()
                self._lexemes[text] = found
        return found

    def lexemes_each(self, c: Any, texts: Sequence[str]) -> dict[str, list[str]]:
        """:meth:`lexemes` of each text apart, those not remembered parsed in one
        statement (``unseen`` asks about every word of a query: one round trip, not one
        per word)."""
        with self._lock:
            found = {t: self._lexemes[t] for t in texts if t in self._lexemes}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            rows = c.execute(
                "SELECT w, ARRAY(SELECT DISTINCT lexeme FROM unnest(to_tsvector('memloci', w))"
                " ORDER BY 1) FROM unnest(%s::text[]) AS w",
                (missing,),
            ).fetchall()
            fresh = {str(w): [str(lx) for lx in lxs] for w, lxs in rows}
            with self._lock:
                if len(self._lexemes) > 4096:
                    self._lexemes.clear()
                self._lexemes.update(fresh)
            found |= fresh
        return found

    def get(self, c: Any, table: str, lexemes: Sequence[str]) -> tuple[int, dict[str, int]]:
        """``(rows in table, {lexeme: rows holding it})``, counted or cached."""
        now = time.monotonic()
        with self._lock:
            known = {
                key: value
                for key in [(table, ""), *((table, lx) for lx in lexemes)]
                if (value := self._values.get(key)) is not None and now - value[0] < STATS_TTL
            }
        missing = [lx for lx in lexemes if (table, lx) not in known]
        fresh: dict[tuple[str, str], int] = {}
        if (table, "") not in known:  # the planner's estimate on big tables, else a count
            fresh[(table, "")] = int(
                c.execute(
                    f"SELECT CASE WHEN reltuples > {BIG_TABLE} THEN reltuples::bigint"
                    f" ELSE (SELECT count(*) FROM {table}) END FROM pg_class"
                    f" WHERE oid = '{table}'::regclass"
                ).fetchone()[0]
            )
        total = fresh.get((table, ""), known.get((table, ""), (0.0, 0))[1])
        common: dict[str, float] = {}
        if missing and total > BIG_TABLE:  # ANALYZE's lexeme frequencies, when it has run
            common = self._common(c, table, now)
            for lexeme in [lx for lx in missing if lx in common]:
                fresh[(table, lexeme)] = round(common[lexeme] * total)
                missing.remove(lexeme)
        if missing:  # one count per lexeme, each a constant tsquery (GIN index)
            # on a big table a lexeme ANALYZE did not list is rarer than the ones it did:
            # the count stops there (at worst it reads that many rows, never all of them)
            cap = round(min(common.values(), default=0.0) * total) if common else 0
            bound = f" LIMIT {cap}" if cap > 0 else ""
            counts = c.execute(
                " UNION ALL ".join(
                    f"SELECT %s, (SELECT count(*) FROM (SELECT 1 FROM {table}"
                    f" WHERE fts @@ %s::tsquery{bound}) hits)"
                    for _ in missing
                ),
                [x for lx in missing for x in (lx, tsquery_literal(lx))],
            ).fetchall()
            for lexeme, df in counts:
                fresh[(table, str(lexeme))] = int(df)
        with self._lock:
            for fkey, count in fresh.items():
                self._values[fkey] = (now, count)
            if len(self._values) > 50_000:  # bounded: forget everything, recount lazily
                self._values.clear()
        found = {k: v[1] for k, v in known.items()} | fresh
        return found[(table, "")], {lx: found[(table, lx)] for lx in lexemes}

    def _common(self, c: Any, table: str, now: float) -> dict[str, float]:
        """``{lexeme: fraction of rows holding it}`` for the lexemes ANALYZE found most
        common in ``table.fts`` (``pg_stats.most_common_elems``; empty before the first
        ANALYZE), cached like the counts."""
        with self._lock:
            cached = self._mce.get(table)
        if cached is not None and now - cached[0] < STATS_TTL:
            return cached[1]
        row = c.execute(
            "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats"
            " WHERE schemaname = current_schema() AND tablename = %s AND attname = 'fts'",
            (table,),
        ).fetchone()
        found = {} if row is None or row[0] is None else dict(zip(row[0], row[1], strict=False))
        with self._lock:
            self._mce[table] = (now, found)
        return found


def tsquery_literal(lexeme: str) -> str:
    """One lexeme as tsquery input (quoted: taken as is, never parsed or stemmed)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def bm25(
    *,
    hits: Sequence[tuple[str, ...]],
    length: int,
    avg_length: float,
    idf: Mapping[str, float],
    weights: Mapping[str, float],
) -> float:
    """BM25 of one row: ``hits`` = (lexeme, weight letters of its occurrences)."""
    norm = K1 * (1 - B + B * length / max(avg_length, 1e-9))
    score = 0.0
    for lexeme, letters in hits:  # letters: one weight letter per occurrence
        tf = sum(weights.get(letter, 0.0) for letter in letters)
        if tf > 0:
            score += idf.get(lexeme, 0.0) * tf * (K1 + 1) / (tf + norm)
    return score


def lexemes_of(c: Any, texts: Sequence[str]) -> list[str]:
    """The distinct lexemes PostgreSQL indexes for ``texts`` (sorted)."""
    return [
        str(r[0])
        for r in c.execute(
            "SELECT DISTINCT lexeme FROM unnest(to_tsvector('memloci', %s)) ORDER BY 1",
            (" ".join(texts),),
        ).fetchall()
    ]


def weight(c: Any, stats: TermStats, table: str, texts: Sequence[str]) -> float:
    """Σ IDF of the lexemes of ``texts`` over ``table`` (see ``Store.match_weight``)."""
    lexemes = stats.lexemes(c, texts)
    if not lexemes:
        return 0.0
    total, dfs = stats.get(c, table, lexemes)
    return sum(bm25_idf(max(total, 1), dfs[lx]) for lx in lexemes)


def unseen(c: Any, stats: TermStats, table: str, words: Sequence[str]) -> list[str]:
    """Those of ``words`` none of whose lexemes a row of ``table`` holds (see
    ``Store.unseen``); a word PostgreSQL indexes no lexeme for is not one."""
    per = stats.lexemes_each(c, words)
    every = sorted({lx for lxs in per.values() for lx in lxs})
    if not every:
        return []
    _, dfs = stats.get(c, table, every)
    return [w for w in words if per[w] and not any(dfs[lx] for lx in per[w])]


def ranked(
    c: Any,
    stats: TermStats,
    *,
    table: str,
    key: str,
    tsq: str,
    tparams: Sequence[Any],
    texts: Sequence[str],
    where: str,
    params: Sequence[Any],
    limit: int,
    weights: Mapping[str, float],
    whole_needed: bool = True,
    owners: Sequence[tuple[str, Sequence[Any]]] = (("", ()),),
    scope: tuple[str, Sequence[Any]] | None = None,
) -> list[tuple[Any, float]]:
    """``(n.<key>, bm25)`` of the best ``limit`` rows of ``table`` (alias ``n``, with a
    ``fts`` tsvector and a unique ``seq``) that match the tsquery ``tsq`` and pass
    ``where``; best first (ties: older rows first). ``whole_needed=False`` when the
    query is single words joined by OR (the per-word candidates cover it; ranking the
    whole OR query by cover density is the slow part). ``owners``: extra conditions
    (SQL, params), one candidate branch each, whose rows together are every row
    ``where`` lets through (:func:`owner_conditions`); ``scope`` (SQL, params): a
    condition ``where`` implies that an index on ``(…, seq)`` serves with each owner
    (the namespaces), so that the newest rows of a big table are read from it (without
    it, the newest rows holding each common lexeme). See the module docstring."""
    lexemes = stats.lexemes(c, texts)
    if not lexemes:  # nothing but punctuation: no row can match
        return []
    per = max(PER_LEXEME, limit)
    total, dfs = stats.get(c, table, lexemes)
    idf = {lx: bm25_idf(max(total, 1), df) for lx, df in dfs.items()}
    w = "'{" + ", ".join(str(weights.get(x, 0.0)) for x in "DCBA") + "}'"
    # candidates: the best rows per lexeme and for the whole query; every branch names its
    # tsquery as a constant, so the planner can use the GIN index and its statistics. A
    # lexeme in more than half the rows has no IDF (BM25 gives it ~0): its branch takes
    # the newest rows instead of ranking them all (only fills the list after the others)
    best = (
        f"(SELECT s.seq FROM (SELECT n.seq, n.fts FROM {table} n WHERE n.fts @@ QUERY OWNER"
        f" AND {where} LIMIT {max(SCAN_CAP, per)}) s"
        f" ORDER BY ts_rank_cd({w}, s.fts, QUERY, 1) DESC, s.seq LIMIT %s)"
    )
    newest = (
        f"(SELECT n.seq FROM {table} n WHERE n.fts @@ QUERY OWNER AND {where}"
        " ORDER BY n.seq DESC LIMIT %s)"
    )
    branches: list[str] = []
    bparams: list[Any] = []

    def branch(template: str, query: str, qparams: Sequence[Any], ranks: bool) -> None:
        for owner, oparams in owners:  # one branch per owner: each can use its index
            branches.append(template.replace("QUERY", query).replace("OWNER", owner))
            bparams.extend([*qparams, *oparams, *params, *(qparams if ranks else ()), per])

    common: list[str] = []
    for lexeme in lexemes:
        literal = tsquery_literal(lexeme)
        if idf[lexeme] > COMMON_IDF and (total <= BIG_TABLE or dfs[lexeme] <= total * RANKED_SHARE):
            branch(best, "%s::tsquery", [literal], True)
        else:
            common.append(literal)
    if whole_needed:  # AND / NOT / phrases: the best rows of the whole query too
        branch(best, tsq, tparams, True)
    if common and (total <= BIG_TABLE or (scope is None and not branches)):
        # the newest rows holding a common lexeme only fill the list after the others
        for literal in common:
            branch(newest, "%s::tsquery", [literal], False)
    elif common and not branches and scope is not None:
        # a big table and nothing rarer to rank: the newest rows holding any common
        # lexeme among the owner's newest RECENT_ROWS, read newest first from an index
        # (one user's rows holding a common word can be thousands: reading them all to
        # sort them cost 10-20 ms a word at 1M rows; their IDF adds next to nothing)
        for owner, oparams in owners:
            branches.append(
                f"(SELECT n.seq FROM (SELECT n.seq FROM {table} n WHERE {scope[0]}{owner}"
                f" ORDER BY n.seq DESC LIMIT {max(RECENT_ROWS, per)}) last"
                f" JOIN {table} n ON n.seq = last.seq"
                f" WHERE n.fts @@ %s::tsquery AND {where} ORDER BY n.seq DESC LIMIT %s)"
            )
            bparams.extend([*scope[1], *oparams, " | ".join(common), *params, per])
    rows = c.execute(
        f"SELECT n.{key}, n.seq, st.dl, st.hits FROM {table} n CROSS JOIN LATERAL"
        " (SELECT coalesce(sum(cardinality(u.positions)), 0) AS dl,"
        " coalesce(array_agg(u.lexeme || ':' || array_to_string(u.weights, ''))"
        " FILTER (WHERE u.lexeme = ANY(%s)), '{}') AS hits FROM unnest(n.fts) u) st"
        f" WHERE n.seq IN ({' UNION '.join(branches)}) AND n.fts @@ {tsq}",
        [lexemes, *bparams, *tparams],
    ).fetchall()
    if not rows:
        return []
    avg = sum(int(r[2]) for r in rows) / len(rows)
    scored: list[tuple[float, int, Any]] = []
    for ident, seq, length, hits in rows:
        parsed = [tuple(h.rsplit(":", 1)) for h in hits]
        score = bm25(hits=parsed, length=int(length), avg_length=avg, idf=idf, weights=weights)
        scored.append((-score, int(seq), ident))
    scored.sort()
    return [(ident, -neg) for neg, _seq, ident in scored[:limit]]
