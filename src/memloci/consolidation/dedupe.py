"""Duplicate and same-key detection for new facts (layer: consolidation).

One rule for every write path: ``remember`` and consolidation both ask
:func:`match_fact` whether a new fact is already known — the same key in the same
owner scope, the same text (case and whitespace folded), or a near-identical meaning
(cosine ≥ the duplicate threshold) — and only differ in what they do about it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from memloci.models import MemoryNode, NodeType, Scope, normalize_key
from memloci.providers.base import Vector
from memloci.storage.base import NodeFilter, Store
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
    namespace: str, types: tuple[NodeType, ...], scope: Scope, *, user: str | None,
    agent: str | None, session: str | None,
) -> NodeFilter:  # fmt: skip
    """The facts a new fact in ``scope`` competes with: same type family and scope, the
    same owning user (user scope) or session (session scope)."""
    return NodeFilter(
        namespaces=(namespace,), types=types, scopes=(scope,),
        owner_user=user if scope is Scope.USER else None,
        sessions=(session,) if scope is Scope.SESSION and session else None,
        agent=agent, session=session,
    )  # fmt: skip


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
        same_key = store.list_nodes(replace(owner, key_norm=normalize_key(key)), limit=1)
        if same_key:
            old = same_key[0]
            if content_hash(old.content) == digest and old.value == value:
                return FactMatch(MatchKind.SAME, old, "already known")
            return FactMatch(MatchKind.KEY, old, f"holds key {key!r}")
    dupes = store.find_by_hash(owner, digest)
    if dupes:
        return FactMatch(MatchKind.DUPLICATE, dupes[0], "already known")
    if embed is None:
        return FactMatch()
    vector = embed()
    near = store.vector_search(owner, vector, 1)
    if near and near[0][1] >= threshold:
        found = store.get_nodes(owner.namespaces, [near[0][0]])
        if found:
            why = f"near-duplicate (similarity {near[0][1]:.2f})"
            return FactMatch(MatchKind.NEAR, found[0], why, vector)
    return FactMatch(vector=vector)
