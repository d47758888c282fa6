"""Meaning of the best facts (layer: retrieval): one more meaning list, searched with the
query's vector moved toward the vectors of its best hits, when those hits state things.

A question about a topic a person's facts cover from several sides ("What pets does
Nate have?", "What does John do to supplement his basketball training?") is answered by
facts that share little with its words: "Nate has turtles as pets" is found, "Nate
adopted a pet named Max" is not, though both are about Nate's animals. Pseudo-relevance
feedback (Rocchio's, on the vectors) searches again with the query's vector plus
:data:`FEEDBACK_SHARE` of the mean vector of the best :data:`FEEDBACK_HITS` fused hits:
the second search looks where the first one's best answers are, and its list joins the
fusion as ``meaning of the best facts`` (weight :data:`FEEDBACK_WEIGHT`, on the same
cosine scale as ``meaning``).

Only when those hits are all knowledge — facts, opinions, procedures — never episodes
(chat turns, notes of what happened): a turn's vector carries how it was said ("Haha,
yes!") as much as what, and the feedback from turns drew the second search off (dev
turns and messages lost up to a point).
Nor when the query names a person no memory holds (:func:`~memloci.retrieval.graph.
strangers`): the best hits are then anyone's, and leaning toward them leans toward
the wrong person. The stored vectors are used (nothing is embedded again); the cost is
one more vector scan, on stores of facts only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memloci.models import NodeType
from memloci.storage.base import NodeFilter, Store

FEEDBACK_HITS = 3  # the best fused hits the query moves toward
FEEDBACK_SHARE = 0.5  # β: how far (the mean of their vectors, times this, is added)
FEEDBACK_WEIGHT = 0.5  # the list's weight in the fusion (meaning's is 0.9)


def feedback_vector(
    store: Store, flt: NodeFilter, best: Sequence[str], query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32] | None:
    """The query's vector moved toward the vectors of ``best`` (the best fused hits, best
    first; the first :data:`FEEDBACK_HITS` are used), unit length; None when there are
    fewer, when any of them is an episode, or when none has a current vector."""
    ids = list(best[:FEEDBACK_HITS])
    if len(ids) < FEEDBACK_HITS:  # a store of one or two: nothing to learn from
        return None
    nodes = store.memories.get_nodes(flt.namespaces, ids)
    if len(nodes) < len(ids) or any(m.type is NodeType.EPISODIC for m in nodes):
        return None
    found: list[npt.NDArray[np.float32]] = []
    for namespace in dict.fromkeys(m.namespace for m in nodes):
        blobs = store.search.vectors(namespace, [m.id for m in nodes if m.namespace == namespace])
        found += [np.frombuffer(b, dtype=np.float32) for b in blobs.values()]
    if not found or any(v.shape != query.shape for v in found):
        return None
    moved = query + FEEDBACK_SHARE * np.mean(found, axis=0)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0 else None
