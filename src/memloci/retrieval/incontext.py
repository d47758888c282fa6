"""Meaning in context (layer: retrieval): a conversation turn matched by what it means
together with the turn it replies to, or the reply it got.

A chat's short messages mean little on their own: "Harry Potter and Game of Thrones
are amazing!" answers "Which fantasy novels do you love?"; "The little one is doing
great, learning commands" answers "How is the puppy?". Their own vectors miss a question
that asks about the whole exchange. So besides the meaning list (each memory's own
vector), search ranks conversation turns on one more list, ``meaning in context``:

* an *exchange* is a turn and the turn it replies to: the nearest earlier turn on its
  chain said by someone else, at most :data:`REPLY_REACH` turns back
  (:meth:`~memloci.storage.base.Store.replies`; a message that says nothing, or a turn
  without a speaker, is in none);
* a turn's cosine on this list is the best of its own and its exchanges', an exchange's
  being the cosine of the mean of its two vectors: the answer gains from its question,
  the question (which only asks, and is discounted for it) from its answer, a statement
  from a reply that says what it was about. A turn in no exchange keeps its own cosine
  (one person's notes to an assistant that never answers), so a note gains nothing from
  the note before it.

The vectors are the stored ones (no text is embedded again), so an edited turn's
exchanges change as soon as it is embedded again; until then its old vector is never
used. The turns looked at are the best :data:`CONTEXT_SEEDS` own-vector matches, the
turns after each through the reply to it (a reply whose question matched, every message
of it: "The little one is doing great" is the third of Maria's answer to "How's your
new pup?") and the turns they reply to (all 150 give the same dev recall at three times
the cost). Facts are on no chain and not on
the list.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memloci.storage.base import NodeFilter, Store

REPLY_REACH = 4  # turns back a reply's question may be (one person's burst of messages)
CONTEXT_SEEDS = 40  # best own-vector matches whose exchanges are looked at


def meaning_in_context(
    store: Store,
    flt: NodeFilter,
    matches: Sequence[tuple[str, float]],
    query: npt.NDArray[np.float32],
    *,
    limit: int,
) -> list[tuple[str, float]]:
    """``(id, cosine)`` of the conversation turns among the best :data:`CONTEXT_SEEDS`
    own-vector ``matches`` and the turn after each, and of the turns they reply to, best
    first: the best of a turn's own cosine to ``query`` and the cosines of its exchanges
    (the mean of its vector and its partner's). Turns the filter hides, and turns without a current
    vector, are left out."""
    seeds = [i for i, _ in matches[:CONTEXT_SEEDS]]
    pairs = store.graph.replies(flt, seeds, reach=REPLY_REACH)
    if not pairs:
        return []
    raw: dict[str, bytes] = {}
    for ns in flt.namespaces:
        wanted = {i for pair in pairs.items() for i in pair if i} - raw.keys()
        raw |= store.search.vectors(ns, sorted(wanted))
    unit = query / max(float(np.linalg.norm(query)), 1e-12)
    vectors = {i: np.frombuffer(b, dtype=np.float32) for i, b in raw.items()}
    own = {i: float(v @ unit) for i, v in vectors.items()}
    best: dict[str, float] = {}
    for turn, asked in pairs.items():
        for i in (turn, asked):
            if i is not None and i in vectors:
                best[i] = max(best.get(i, -1.0), own[i])
        if turn not in vectors or asked is None or asked not in vectors:
            continue
        mean = vectors[turn] + vectors[asked]
        cosine = float(mean @ unit) / max(float(np.linalg.norm(mean)), 1e-12)
        for i in (turn, asked):
            best[i] = max(best[i], cosine)
    return sorted(best.items(), key=lambda r: (-r[1], r[0]))[:limit]
