"""Calibrated relevance (layer: retrieval): one score, one threshold.

The fused score (:mod:`memloci.retrieval.fusion`) ranks well, but it measures how far
a memory stands out *among the candidates*: in a store of three memories an unrelated
question still finds one that stands out, and a question that shares a name with a
memory ("where does Sam live?" → "Sam is vegetarian") scores high on the name alone.
:attr:`~memloci.models.SearchHit.score` is therefore this module's *relevance*, built
so that one threshold, :data:`RELEVANT` (``Settings.relevance_threshold``), separates
"answers the question" from "does not" on stores of any size:

``relevance = fused ** size_lift(candidates) · support``

(``fused`` with the share its session lent it counted at half, :data:`SESSION`.)

* ``size_lift``: in a large scope the candidate list is a narrow, on-topic slice of
  the store, and the fused score is spread upwards a little (exponent :data:`SPREAD`) so
  that what a real question ranks below its best hits still counts; in a scope of a few
  memories every memory is a candidate and fused scores are compressed towards 0, so
  they are lifted more (the exponent falls to ``SPREAD · SMALL_LIFT`` for one or two
  memories, rising with the logarithm of the candidate count until :data:`FULL_SIZE`).
* ``support``: absolute evidence that the best hits speak to the query, whatever the
  store holds: the best of the first :data:`HEAD` hits' ``min(1, max(meaning, words))``,
  where *meaning* is the query–memory cosine on the embedder's own scale
  (:class:`~memloci.providers.base.Calibration`: ``unrelated`` → 0, ``answers`` → 1),
  and *words* is the share of the query's full-text weight (summed IDF of its words)
  the memory's bm25 reaches, over :data:`WORDS` (in a store so small that the query's
  words weigh less than one common word, any full-text match); a memory linked to an entity the
  query names (a person, a place the store knows) is supported in full (:data:`NAMED`):
  a question about someone this store knows is a question for this store. When none of
  the best hits shares much meaning or many rare words with the query, the query is not
  answered by this store, and every hit keeps only part of its fused score, however
  much it stands out among the candidates. It is one factor for the whole list, so the
  order stays the fused ranking's.

Measured on the LoCoMo dev splits with an off-topic question set
(``bench/context_bench.py``): at :data:`RELEVANT` an off-topic question gets no hit above
the threshold in about 96 % of cases, and a real question's evidence (found in the top
ten) stands above it in about 97 %.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from memloci.providers.base import DEFAULT_CALIBRATION, Calibration
from memloci.retrieval.fusion import LEXICAL_HALF, Fused

RELEVANT = 0.7  # the documented threshold: at or above it a hit answers the query
SMALL_LIFT = 0.3  # the size lift in a scope of one or two memories
SPREAD = 0.7  # the exponent applied to fused scores in a large scope: a memory a real
# question ranks below its best hits still counts (fused 0.6 → 0.70)
FULL_SIZE = 150  # candidates from which the fused score is taken as it is
NAMED = 1.0  # support of a memory linked to someone or something the query names
WORDS = 0.5  # the share of the query's full-text weight at which words alone support a hit
HEAD = 3  # the best hits whose support counts
DEPTH = 0.5  # how steeply a hit's relevance falls with its standing against the best hit
SESSION = 0.5  # what the session's share of a fused score counts for in relevance


def size_lift(candidates: int) -> float:
    """The exponent applied to fused scores in a scope of ``candidates`` memories."""
    share = min(1.0, math.log(max(candidates, 2)) / math.log(FULL_SIZE))
    return SPREAD * (SMALL_LIFT + (1.0 - SMALL_LIFT) * share)


def support(
    entry: Fused, *, query_weight: float, calibration: Calibration = DEFAULT_CALIBRATION
) -> float:
    """Absolute evidence in [0, 1] that ``entry`` speaks to the query (module doc)."""
    meaning = 0.0
    cosine = entry.raw.get("vector")
    if cosine is not None:
        span = max(calibration.answers - calibration.unrelated, 1e-6)
        meaning = (cosine - calibration.unrelated) / span
    words = 0.0
    bm25 = entry.raw.get("fulltext")
    if bm25 is not None and query_weight < LEXICAL_HALF:
        words = 1.0  # a store of a few memories: bm25's IDF is ~0, a word match is all
    elif bm25 is not None:
        words = bm25 / query_weight / WORDS
    named = NAMED if "entity" in entry.evidence else 0.0
    return max(0.0, min(1.0, max(meaning, words, named)))


def by_relevance(
    entries: Sequence[Fused],
    *,
    candidates: int,
    query_weight: float,
    calibration: Calibration = DEFAULT_CALIBRATION,
) -> list[tuple[Fused, float]]:
    """``entries`` (best first) with their relevance, in the same order (module doc)."""
    if not entries:
        return []
    backing = max(
        (support(e, query_weight=query_weight, calibration=calibration) for e in entries[:HEAD]),
        default=0.0,
    )
    lift = size_lift(candidates)
    own = [max(0.0, _own(e)) ** lift for e in entries]
    best = max(own)
    if best <= 0:
        return [(e, 0.0) for e in entries]
    answered = best * backing
    return [(e, answered * (o / best) ** DEPTH) for e, o in zip(entries, own, strict=True)]


def _own(entry: Fused) -> float:
    """``entry``'s fused score with its session's share counted at :data:`SESSION`: the
    session of the best hits ranks well (a conversation is about a few things), but it
    is the best hit's own strength lent back to it, not evidence that it answers."""
    if not 0.0 < entry.lent < 1.0:
        return entry.score
    before = 1.0 - (1.0 - entry.score) / (1.0 - entry.lent)
    return 1.0 - (1.0 - before) * (1.0 - SESSION * entry.lent)
