"""Duplicate and same-key detection for new facts (layer: consolidation).

One rule for every write path: ``remember`` and consolidation both ask
:func:`match_fact` whether a new fact is already known — the same key in the same
owner scope, the same text (:func:`same_text`: case and whitespace folded, but not
in tokens such as "Pa55word"), or a near-identical meaning (cosine ≥ the duplicate
threshold *and* :func:`same_details`: the same numbers with sign and unit, names, in
order, literal tokens, negations, comparison words and word order, see
:mod:`memloci.consolidation.details`) — and only differ in what they do about it. Both
run the check and the write inside one ``store.exclusive(fact_lock(namespace))``
transaction, so concurrent writers (threads, processes, servers) never store the same
fact twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from memloci.consolidation.details import details as details  # re-exported
from memloci.consolidation.details import same_details as same_details  # re-exported
from memloci.consolidation.details import same_text as same_text  # re-exported
from memloci.models import MemoryNode, NodeType, Scope, normalize_key
from memloci.providers.base import Vector, calibration_of
from memloci.storage.base import NodeFilter, NodePatch, Store
from memloci.storage.rows import content_hash


class MatchKind(StrEnum):
    SAME = "same"  # same key, same content and value
    KEY = "key"  # same key, other content or value
    DUPLICATE = "duplicate"  # same text
    NEAR = "near"  # near-identical meaning


@dataclass(frozen=True)
class FactMatch:
    """What :func:`match_fact` found (``node`` None: nothing) and the new fact's vector,
    if it had to be computed."""

    kind: MatchKind | None = None
    node: MemoryNode | None = None
    why: str = ""
    vector: Vector | None = None


def fact_owner(
    namespace: str,
    types: tuple[NodeType, ...],
    scope: Scope,
    *,
    user: str | None,
    agent: str | None,
    session: str | None,
) -> NodeFilter:
    """The facts a new fact in ``scope`` competes with: same type family and scope, the
    same owning user (user scope) or session (session scope)."""
    return NodeFilter(
        namespaces=(namespace,),
        types=types,
        scopes=(scope,),
        owner_user=user if scope is Scope.USER else None,
        sessions=(session,) if scope is Scope.SESSION and session else None,
        agent=agent,
        session=session,
    )


def fact_lock(namespace: str) -> str:
    """The ``store.exclusive`` key that serialises fact dedupe in a namespace."""
    return f"facts:{namespace}"


def match_fact(
    store: Store,
    owner: NodeFilter,
    text: str,
    *,
    key: str | None = None,
    value: Any = None,
    embed: Callable[[], Vector] | None = None,
    threshold: float = 1.0,
) -> FactMatch:
    """The current fact a new one duplicates or shares its key with, checked cheapest
    first: key, exact text, then (only if ``embed`` is given) meaning."""
    digest = content_hash(text)
    if key is not None:
        same_key = store.memories.list_nodes(replace(owner, key_norm=normalize_key(key)), limit=1)
        if same_key:
            old = same_key[0]
            if same_text(old.content, text) and old.value == value:
                return FactMatch(MatchKind.SAME, old, "already known")
            return FactMatch(MatchKind.KEY, old, f"holds key {key!r}")
    dupes = [n for n in store.memories.find_by_hash(owner, digest) if same_text(n.content, text)]
    if dupes:
        return FactMatch(MatchKind.DUPLICATE, dupes[0], "already known")
    if embed is None:
        return FactMatch()
    vector = embed()
    near = [(i, sim) for i, sim in store.search.vector_search(owner, vector, 5) if sim >= threshold]
    found = {n.id: n for n in store.memories.get_nodes(owner.namespaces, [i for i, _ in near])}
    for node_id, sim in near:  # best first; only the same statement counts
        node = found.get(node_id)
        if node is not None and same_details(node.content, text):
            why = f"near-duplicate (similarity {sim:.2f})"
            return FactMatch(MatchKind.NEAR, node, why, vector)
    return FactMatch(vector=vector)


def duplicate_threshold(configured: float | None, embedder: object | None) -> float:
    """The cosine at which a new fact restates a stored one: the configured
    ``duplicate_threshold``, else the embedder's calibrated one (0.92 for MiniLM)."""
    return configured if configured is not None else calibration_of(embedder).duplicate


def restatement(old: MemoryNode, given: Mapping[str, Any]) -> tuple[NodePatch, list[str]]:
    """The patch a confirmed duplicate applies to the fact it repeats: one confirmation
    more, the ``key`` and ``value`` it was given (``given``: those not None) where the
    fact lacks them or holds others — a new key or value is a new version, as
    ``update`` makes — and its ``category`` where the fact has none (``general``); a
    category the fact already has stays (REST's ``POST /api/memory/`` reports it as not
    applied); its ``confidence`` where the fact's is lower (decay took it: a fact said
    again is as certain as it is said now). Returns the patch and the changes, described."""
    extra: dict[str, Any] = {}
    changes: list[str] = []
    key, value, category = given.get("key"), given.get("value"), given.get("category")
    if key is not None and (old.key is None or normalize_key(key) != normalize_key(old.key)):
        extra = {"key": key, "version": old.version + 1}
        changes.append(f"key {key!r}")
    set_value = value is not None and value != old.value
    if set_value:
        changes.append(f"value {value!r}")
    if category is not None and category != old.category and old.category == "general":
        changes.append(f"category {category!r}")
    else:
        category = None
    said = given.get("confidence")  # said again: as certain as it is said now, at least
    patch = NodePatch(
        value=value if set_value else None,
        set_value=set_value,
        category=category,
        confidence=said if said is not None and said > old.confidence else None,
        times_confirmed_delta=1,
        extra=extra,
    )
    return patch, changes
