"""Full-text query words as the index holds them, and their IDF (layer: storage).

:meth:`SQLiteSearch.match_weight` needs each query word's document frequency in
``nodes_fts``. The index holds Porter stems ("running" → "run"), so a word is first
put through the very tokenizer the index uses — an FTS5 table in a private in-memory
database — and the stems' counts are read from an ``fts5vocab`` table over the index
(``temp.nodes_fts_vocab``, made with each connection). FTS5 counts a stem's documents by
reading its whole posting list, so in an index of more than :data:`CACHE_MIN` rows
counts (and the row count) are cached for :data:`STATS_TTL` seconds: they drift
slowly, and a stale count only nudges how much a full-text match counts, never which
memories are found. Smaller indexes are counted afresh each time (it is cheap there,
and a young store's counts change fast).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from typing import Any

from memloci.storage.rows import bm25_idf
from memloci.storage.sqlite.base import scratch_connection

TOKENIZE = "porter unicode61 remove_diacritics 2"  # as nodes_fts (migration 0001)
STATS_TTL = 60.0  # seconds a document count is reused
CACHE_MIN = 10_000  # rows: below this the counts are cheap and always read afresh
_MAX_CACHED = 20_000  # words / stems remembered (the caches start over beyond this)
_PHRASE = re.compile(r'"((?:[^"]|"")*)"')


def phrases(match: str) -> list[str]:
    """The quoted phrases of an FTS5 match expression (as :func:`fts_match` writes it)."""
    return [m.replace('""', '"') for m in _PHRASE.findall(match)]


class Stems:
    """Words → the index's tokens for them (cached; safe to share between threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: Any = None
        self._known: dict[str, tuple[str, ...]] = {}

    def of(self, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        with self._lock:
            missing = [w for w in dict.fromkeys(words) if w not in self._known]
            if missing:
                if len(self._known) > _MAX_CACHED:
                    self._known.clear()
                self._known.update(self._tokenize(missing))
            return {w: self._known[w] for w in words}

    def _tokenize(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        if self._conn is None:
            conn = scratch_connection()
            conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{TOKENIZE}')")
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
            self._conn = conn
        conn = self._conn
        conn.execute("DELETE FROM t")
        conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(words, start=1))
        found: dict[int, list[str]] = {}
        for doc, term in conn.execute('SELECT doc, term FROM v ORDER BY doc, "offset"'):
            found.setdefault(doc, []).append(term)
        return {w: tuple(found.get(i, ())) for i, w in enumerate(words, start=1)}


STEMS = Stems()


class TermStats:
    """Cached row count and per-stem document counts of one store's ``nodes_fts``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total: tuple[int, float] | None = None
        self._df: dict[str, tuple[int, float]] = {}

    def weight(self, c: Any, match: str) -> float:
        """Σ IDF over the distinct stems of ``match``'s phrases (see the module
        docstring); 0 when it has none. ``c`` reads the store."""
        stems = list(dict.fromkeys(t for toks in STEMS.of(phrases(match)).values() for t in toks))
        if not stems:
            return 0.0
        total, counts = self._counts(c, stems)
        return sum(bm25_idf(total, counts[s]) for s in stems)

    def unseen(self, c: Any, words: Sequence[str]) -> list[str]:
        """Those of ``words`` whose stems no row of the index holds (a word that is
        nothing but punctuation to the tokenizer is not one)."""
        stems = STEMS.of(words)
        _, counts = self._counts(c, list(dict.fromkeys(t for ts in stems.values() for t in ts)))
        return [w for w in words if stems[w] and not any(counts[t] for t in stems[w])]

    def _counts(self, c: Any, stems: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(rows in the index, {stem: rows holding it}), cached as the docstring says."""
        now = time.monotonic()
        with self._lock:
            total = self._total
            known = {s: self._df[s][0] for s in stems if s in self._df and self._df[s][1] > now}
        if total is None or total[1] <= now or total[0] <= CACHE_MIN:
            total = (int(c.execute("SELECT count(*) FROM nodes").fetchone()[0]), now + STATS_TTL)
        if total[0] <= CACHE_MIN:
            known = {}
        fresh = {}
        for stem in stems:
            if stem not in known:
                row = c.execute("SELECT doc FROM temp.nodes_fts_vocab WHERE term = ?", (stem,))
                found = row.fetchone()
                fresh[stem] = int(found[0]) if found else 0
        if total[0] > CACHE_MIN:
            with self._lock:
                self._total = total
                if len(self._df) > _MAX_CACHED:
                    self._df.clear()
                self._df.update({s: (n, now + STATS_TTL) for s, n in fresh.items()})
        return total[0], {**known, **fresh}


__all__ = ["STATS_TTL", "STEMS", "TermStats", "phrases"]
