"""Query words spelt otherwise than the memories spell them (layer: retrieval).

"is the user alergic to penuts?" finds nothing by its words: no memory holds "alergic"
or "penuts", and the full-text index matches words exactly (up to their stems). Meaning
still comes near — the misspelt query's vector lands close to "I'm allergic to
peanuts", if not first. So a query word that no memory holds in any form
(``Store.unseen``) is compared with the words of the best matches by meaning: a word
one edit away (two, for a word of eight letters or more) — a letter added, dropped,
changed, or two neighbours swapped — with the same first letter (or the first two
swapped) is taken for what was meant, and the full-text search runs again with it.

Conservative on purpose: only words of four letters or more that are no English word
(not whole in the ~25,000-word vocabulary the bundled embedders' tokenizer ships:
"mates" is not "makes", "core" not "care", though neither is in any memory), never a
capitalised name (a name no memory holds is somebody else, ``strangers``), and when two
words of the matches are equally near, the one more of them use.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import NamedTuple

from memloci.storage.base import NodeFilter, Store
from memloci.words import terms

MIN_LENGTH = 4  # letters of a word worth respelling
LONG = 8  # letters from which two edits are allowed
NEIGHBOURS = 30  # best matches by meaning whose words are looked at
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


@functools.cache
def english() -> frozenset[str]:
    """The whole words of the tokenizer vocabulary shipped with memloci (BERT's uncased
    word pieces, less the pieces that continue a word)."""
    vocab = resources.files("memloci.providers") / "minilm_tokenizer" / "vocab.txt"
    lines = vocab.read_text(encoding="utf-8").splitlines()
    return frozenset(w for w in lines if w.isalpha() and len(w) >= MIN_LENGTH)


def candidates(query: str) -> list[str]:
    """The query's words that could be misspelt: content words of :data:`MIN_LENGTH`
    letters or more, all letters, not written with a capital (names), no English word."""
    lower = {m.group(0).casefold() for m in _WORD.finditer(query) if m.group(0).islower()}
    return [
        w
        for w in dict.fromkeys(terms(query))
        if w in lower and len(w) >= MIN_LENGTH and w not in english()
    ]


def distance(a: str, b: str, limit: int) -> int:
    """Edits (insert, delete, change, swap two neighbours) from ``a`` to ``b``, or
    ``limit + 1`` when more than ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        if min(row) > limit:
            return limit + 1
        prev2, prev = prev, row
    return prev[-1]


def _starts_alike(a: str, b: str) -> bool:
    return a[0] == b[0] or (len(a) > 1 and len(b) > 1 and a[:2] == b[1::-1])


def respell(unseen: Sequence[str], texts: Iterable[str]) -> dict[str, str]:
    """For each of ``unseen`` (query words no memory holds), the word of ``texts`` (the
    best matches by meaning, best first) it was meant to be, when one is near enough;
    the nearest, then the one more texts use, then the one a better match uses."""
    if not unseen:
        return {}
    seen: Counter[str] = Counter()
    order: dict[str, int] = {}
    for text in texts:
        for word in {m.group(0).casefold() for m in _WORD.finditer(text)}:
            seen[word] += 1
            order.setdefault(word, len(order))
    out: dict[str, str] = {}
    for word in unseen:
        limit = 2 if len(word) >= LONG else 1
        best: tuple[int, int, int] | None = None
        for other in seen:
            if len(other) < MIN_LENGTH - 1 or not _starts_alike(word, other):
                continue
            d = distance(word, other, limit)
            if d <= limit:
                rank = (d, -seen[other], order[other])
                if best is None or rank < best:
                    best, out[word] = rank, other
    return out


def respelt(query: str, fixes: dict[str, str]) -> str:
    """``query`` with each word of ``fixes`` replaced (whole words, any case)."""
    for wrong, right in fixes.items():
        query = re.sub(rf"(?<![\w'’]){re.escape(wrong)}(?![\w'’])", right, query, flags=re.I)
    return query


class Respelt(NamedTuple):
    """A query with its misspelt words respelt, and what became what."""

    query: str
    fixes: dict[str, str]

    def note(self) -> str:
        """What ``why`` says of it: ``words searched as: alergic → allergic``."""
        return "words searched as: " + ", ".join(f"{a} → {b}" for a, b in self.fixes.items())


def meant(
    store: Store,
    flt: NodeFilter,
    query: str,
    by_meaning: Sequence[tuple[str, float]],
    unknown: Sequence[str] = (),
) -> Respelt | None:
    """``query`` with its misspelt words respelt as the best matches by meaning
    (``by_meaning``, ids best first) spell them, or None when no word needs it or none
    is near enough. ``unknown``: the people it names that no memory does (left alone)."""
    strangers = {n.casefold() for n in unknown}
    words = [w for w in candidates(query) if w not in strangers]
    unseen = store.search.unseen(words) if words and by_meaning else []
    if not unseen:
        return None
    ids = [i for i, _ in by_meaning[:NEIGHBOURS]]
    found = {m.id: m.content for m in store.memories.get_nodes(flt.namespaces, ids)}
    fixes = respell(unseen, (found[i] for i in ids if i in found))
    return Respelt(respelt(query, fixes), fixes) if fixes else None
