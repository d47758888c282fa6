"""What holds now comes first (layer: retrieval): a chat turn whose facts were all since
superseded, and the fact that superseded them.

"I live in Lisbon" was said in May; consolidation drew "User lives in Lisbon" from it;
in June "I moved to Porto last week" gave "User moved to Porto", which superseded it.
Asked "where does the user live?", the May turn matches best by words and meaning —
the June one shares neither "live" nor "lives". So, among the best hits of a search:

* a turn every fact of which consolidation drew from it has since been superseded by a
  current fact keeps :data:`REPLACED` of its score (``why``: ``since replaced by
  [id]``): it is what was said then, and a question about the past still finds it;
* the current fact that superseded them holds now what that turn answered: it scores at
  least what the turn scored before the discount (``why``: ``holds now in place of the
  hit #r``), joining the hits when it was not among them — and then takes the place of
  its own turn when that is shown too (the pipeline's ``said once`` stage).
"""

from __future__ import annotations

from dataclasses import replace as with_changes

from memloci.models import EdgeType, MemoryNode, NodeType
from memloci.retrieval.fusion import Fused
from memloci.storage.base import NodeFilter, Store

REPLACED = 0.8  # a turn all of whose facts were since superseded keeps this of its score
CHAIN = 4  # supersessions followed from a fact to the current one that holds in its place


def replaced(
    store: Store, head: list[Fused], nodes: dict[str, MemoryNode], flt: NodeFilter
) -> list[Fused]:
    """``head`` with each replaced turn discounted and its replacement raised (module
    docstring); ``nodes`` gains the replacements that joined. Best first again."""
    turns = [f.id for f in head if nodes[f.id].type is NodeType.EPISODIC]
    if not turns:
        return head
    every = with_changes(flt, include_invalid=True, types=None, ids=None)
    drawn: dict[str, list[str]] = {}
    for fact, turn, _, _ in store.graph.walk(
        every,
        turns,
        EdgeType.DERIVED_FROM,
        depth=1,
        direction="backward",
        limit=len(turns) * 4,
    ):
        drawn.setdefault(turn, []).append(fact)
    facts = {f for fs in drawn.values() for f in fs}
    if not facts:
        return head
    newer: dict[str, str] = {}  # superseded fact -> the current fact that replaced it
    for old in sorted(facts):  # one walk each: a walk returns a node once, and one
        # current fact may have replaced several ("no longer in Lisbon", "in Lisbon")
        current = _current_heir(store, flt, every, old)
        if current is not None:
            newer[old] = current
    by = {t: newer[fs[0]] for t, fs in drawn.items() if all(f in newer for f in fs)}
    if not by:
        return head
    missing = sorted({n for n in by.values() if n not in nodes})
    nodes |= {m.id: m for m in store.memories.get_nodes(flt.namespaces, missing)}  # those visible
    shown = {f.id: f for f in head}
    out = list(head)
    for entry in head:
        heir_id = by.get(entry.id)
        if heir_id is None:
            continue
        heir = shown.get(heir_id)
        if heir_id in nodes and entry.score > (heir.score if heir else 0.0):
            # it answers what the replaced turn answered
            if heir is None:
                heir = shown[heir_id] = Fused(heir_id)
                out.append(heir)
            heir.score = entry.score
            heir.ranks["replaces"] = min(entry.ranks.values(), default=1)
            heir.evidence["replaces"] = entry.score
        entry.score *= REPLACED
        note = f"since replaced by [{heir_id}]"
        entry.note = "; ".join(filter(None, [entry.note, note]))
    return sorted(out, key=lambda f: (-f.score, min(f.ranks.values()), f.id))


def _current_heir(store: Store, flt: NodeFilter, every: NodeFilter, old: str) -> str | None:
    """The current fact (visible through ``flt``) that holds in place of ``old``: the one
    that superseded it, or, when that one was superseded in turn ("lives in Lisbon" →
    "no longer lives in Lisbon" → "lives in Porto"), the nearest current fact down the
    chain, at most :data:`CHAIN` steps."""
    direct = store.graph.walk(
        flt, [old], EdgeType.SUPERSEDES, depth=1, direction="backward", limit=1
    )
    if direct:
        return direct[0][0]
    chain = store.graph.walk(
        every, [old], EdgeType.SUPERSEDES, depth=CHAIN, direction="backward", limit=2 * CHAIN
    )
    if not chain:
        return None
    steps = {node_id: distance for node_id, _, distance, _ in chain}
    wanted = tuple(sorted(steps))
    current = store.memories.list_nodes(
        with_changes(flt, ids=wanted, types=None), limit=len(wanted)
    )
    if not current:
        return None
    return min(current, key=lambda n: (steps[n.id], n.id)).id
