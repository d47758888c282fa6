"""Meaning in context (layer: retrieval): a conversation turn matched by what it means
together with the turn it replies to, or the reply it got.

A chat's short messages mean little on their own: "Harry Potter and Game of Thrones
are amazing!" answers "Which fantasy novels do you love?"; "The little one is doing
great, learning commands" answers "How is the puppy?". Their own vectors miss a question
that asks about the whole exchange. So besides each memory's own vector, search ranks
the turns of a conversation by their *exchanges*: a turn and the turn it replies to (the
nearest earlier turn on its chain said by someone else, at most :data:`REPLY_REACH`
turns back: :meth:`~memloci.storage.base.Store.replies`), as the mean of the two
vectors, cosine to the query. Each turn takes its best exchange, as a reply or as the
turn replied to, so the question and its answer stand alike and what tells them apart
is the rest of the ranking (a question only asks; a question about Ana is answered by
Ana). One more list for fusion, ``meaning in context``. A turn in no exchange (a
message that says nothing, a run of one person's notes to an assistant that never
answers) is not on the list: its meaning is its own vector's. So a note that follows
another note of the same person gains nothing from it.

The vectors are the stored ones (no text is embedded again), so an edited turn's
exchanges change as soon as it is embedded again; until then its old vector is never
used. The exchanges looked at are those of the best own-vector matches and of the turn
after each (a reply whose question matched).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memloci.storage.base import NodeFilter, Store

REPLY_REACH = 4  # turns back a reply's question may be (one person's burst of messages)


def meaning_in_context(
    store: Store,
    flt: NodeFilter,
    matches: Sequence[tuple[str, float]],
    query: npt.NDArray[np.float32],
    *,
    limit: int,
) -> list[tuple[str, float]]:
    """``(id, cosine)`` of the turns in the exchanges of the best own-vector ``matches``
    and of the turn after each, best first: a turn's cosine is the best of its exchanges'
    (the cosine of ``query`` with the mean of the two turns' vectors). Turns the filter
    hides, and turns without a current vector, are left out."""
    pairs = store.replies(flt, [i for i, _ in matches], reach=REPLY_REACH)
    if not pairs:
        return []
    raw: dict[str, bytes] = {}
    for ns in flt.namespaces:
        wanted = {i for pair in pairs.items() for i in pair} - raw.keys()
        raw |= store.vectors(ns, sorted(wanted))
    kept = [(t, a) for t, a in pairs.items() if t in raw and a in raw]
    if not kept:
        return []
    replies = np.stack([np.frombuffer(raw[t], dtype=np.float32) for t, _ in kept])
    asked = np.stack([np.frombuffer(raw[a], dtype=np.float32) for _, a in kept])
    means = replies + asked
    norms = np.maximum(np.linalg.norm(means, axis=1), 1e-12)
    unit = query / max(float(np.linalg.norm(query)), 1e-12)
    cosines = (means @ unit) / norms
    best: dict[str, float] = {}  # each turn: its best exchange
    for pair, cosine in zip(kept, cosines.tolist(), strict=True):
        for turn in pair:
            best[turn] = max(best.get(turn, -1.0), cosine)
    return sorted(best.items(), key=lambda r: (-r[1], r[0]))[:limit]
