"""The storage contract (layer: storage).

Every backend implements :class:`Store`. Every method is bounded by namespace:
there is no call that reads or writes across namespaces unless the caller
lists them in :class:`NodeFilter.namespaces`. Scores returned by search
primitives are *higher is better*.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from memloci.models import (
    ApiKey,
    Edge,
    Entity,
    MemoryNode,
    MemoryUser,
    MemoryVersion,
    NodeType,
    Scope,
    StoreStats,
    Thread,
)


@dataclass(frozen=True)
class NodeFilter:
    """Which nodes a read may see.

    ``user`` / ``agent`` / ``session`` are the *caller's context*: nodes scoped to
    another user, agent or session are hidden, shared (wider-scope) nodes stay
    visible. ``owner_user`` restricts to nodes recorded for exactly that user.
    """

    namespaces: tuple[str, ...] = ("default",)
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    owner_user: str | None = None
    sessions: tuple[str, ...] | None = None
    types: tuple[NodeType, ...] | None = None
    scopes: tuple[Scope, ...] | None = None
    categories: tuple[str, ...] | None = None
    after: datetime | None = None
    before: datetime | None = None
    min_confidence: float | None = None
    as_of: datetime | None = None  # None = current only
    include_invalid: bool = False  # True = ignore validity entirely (history views)
    key_norm: str | None = None
    ids: tuple[str, ...] | None = None


@dataclass
class NodePatch:
    """Fields an update may change (None = keep)."""

    content: str | None = None
    value: Any = None
    set_value: bool = False
    category: str | None = None
    subject: str | None = None
    metadata: dict[str, Any] | None = None
    confidence: float | None = None
    decay_rate: float | None = None
    times_confirmed_delta: int = 0
    valid_until: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PendingEmbedding:
    """A node waiting for its vector; ``content_hash`` guards against racing edits."""

    id: str
    content_hash: str
    content: str
    speaker: str | None
    key: str | None
    subject: str | None


class Store(Protocol):
    """What every storage backend provides. Capability flags, never ``None`` returns."""

    supports_vectors: bool

    # lifecycle / metadata
    def close(self) -> None: ...
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def bind_embedder(self, model_id: str, dimension: int) -> None: ...
    def schema_version(self) -> int: ...
    def batch(self) -> AbstractContextManager[None]:
        """Several writes as one transaction: all land or none (nested writes join it)."""
        ...

    # nodes
    def insert_node(self, node: MemoryNode, *, link_previous: bool = False) -> MemoryNode: ...
    def insert_nodes(self, nodes: Sequence[MemoryNode], *, link_previous: bool = False) -> None: ...
    def id_exists(self, node_id: str) -> bool: ...
    def get_node(self, namespace: str, node_id: str) -> MemoryNode | None: ...
    def get_nodes(self, namespace: str | Sequence[str], ids: Sequence[str]) -> list[MemoryNode]: ...
    def list_nodes(
        self, flt: NodeFilter, *, limit: int = 50, offset: int = 0, order: str = "created"
    ) -> list[MemoryNode]: ...
    def count_nodes(self, flt: NodeFilter) -> int: ...
    def iter_nodes(self, namespace: str) -> Iterator[MemoryNode]: ...
    def update_node(
        self, namespace: str, node_id: str, patch: NodePatch, *, session: str | None = None
    ) -> MemoryNode: ...
    def supersede(self, namespace: str, old_id: str, new: MemoryNode, *, now: datetime) -> None: ...
    def purge_node(self, namespace: str, node_id: str) -> bool: ...
    def clear(self, namespace: str, flt: NodeFilter | None = None) -> int: ...
    def versions(self, namespace: str, node_id: str) -> list[MemoryVersion]: ...
    def find_by_hash(self, flt: NodeFilter, content_hash: str) -> list[MemoryNode]: ...
    def prune_oldest(self, flt: NodeFilter, keep: int, *, now: datetime) -> int: ...
    def touch(self, namespace: str, ids: Sequence[str], *, now: datetime) -> None: ...
    def import_versions(self, versions: Sequence[MemoryVersion]) -> None: ...

    # edges
    def insert_edge(self, edge: Edge) -> None: ...
    def insert_edges(self, edges: Sequence[Edge]) -> None: ...
    def iter_edges(self, namespace: str) -> Iterator[Edge]: ...
    def iter_versions(self, namespace: str) -> Iterator[MemoryVersion]: ...
    def edges(self, namespace: str, node_id: str, relation: str | None = None) -> list[Edge]: ...

    # embeddings
    def pending_embeddings(self, limit: int) -> list[PendingEmbedding]: ...
    def save_embeddings(
        self, items: Sequence[PendingEmbedding], vectors: npt.NDArray[np.float32]
    ) -> int: ...
    def reset_embeddings(self) -> int: ...
    def vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, bytes]: ...

    # search primitives (higher score = better)
    def fulltext(self, flt: NodeFilter, match: str, limit: int) -> list[tuple[str, float]]: ...
    def vector_search(
        self, flt: NodeFilter, query: npt.NDArray[np.float32], limit: int
    ) -> list[tuple[str, float]]: ...
    def key_search(self, flt: NodeFilter, key_norm: str, limit: int) -> list[tuple[str, float]]: ...
    def neighbours(
        self, namespace: str, ids: Sequence[str], relation: str
    ) -> dict[str, list[str]]: ...

    # people: memory users (an upsert replaces the row; channel ids are indexed)
    def upsert_user(self, user: MemoryUser) -> MemoryUser: ...
    def get_user(self, namespace: str, user_id: str) -> MemoryUser | None: ...
    def list_users(
        self, namespace: str, limit: int = 100, offset: int = 0, *, query: str | None = None
    ) -> list[MemoryUser]: ...
    def count_users(self, namespace: str, *, query: str | None = None) -> int: ...
    def find_user(self, namespace: str, channel: str, identifier: str) -> MemoryUser | None:
        """A user holding that channel id (not following ``merged_into``; unmerged first)."""
        ...

    def delete_users(self, namespace: str, ids: Sequence[str]) -> int: ...
    def reassign_user(self, namespace: str, source_id: str, target_id: str) -> int:
        """Move memories (with their full-text owner) and threads of one user to another."""
        ...

    # conversation threads (listings carry no messages, only ``message_count``)
    def upsert_thread(self, thread: Thread) -> Thread: ...
    def get_thread(self, namespace: str, thread_id: str) -> Thread | None: ...
    def list_threads(
        self,
        namespace: str,
        *,
        user: str | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Thread]: ...
    def count_threads(
        self, namespace: str, *, user: str | None = None, agent: str | None = None
    ) -> int: ...
    def delete_threads(self, namespace: str, ids: Sequence[str]) -> int: ...

    # entities and their links to memories (node_entities)
    def insert_entity(self, entity: Entity) -> Entity:
        """Store a new entity (a fresh id if the given one is taken); returns it."""
        ...

    def update_entity(self, entity: Entity) -> Entity: ...
    def get_entity(self, namespace: str, entity_id: str) -> Entity | None: ...
    def find_entity(self, namespace: str, name: str) -> Entity | None:
        """By canonical name or alias, case-insensitive; a canonical match wins."""
        ...

    def list_entities(
        self,
        namespace: str,
        *,
        type: str | None = None,
        query: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Entity]: ...
    def count_entities(
        self, namespace: str, *, type: str | None = None, query: str | None = None
    ) -> int: ...
    def delete_entities(self, namespace: str, ids: Sequence[str]) -> int: ...
    def link_entities(self, namespace: str, node_id: str, entity_ids: Sequence[str]) -> int: ...
    def node_entities(self, namespace: str, node_ids: Sequence[str]) -> dict[str, list[Entity]]: ...
    def entity_nodes(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 20
    ) -> list[MemoryNode]: ...
    def related_entities(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 20
    ) -> list[tuple[Entity, int]]: ...

    # API keys (not namespaced: each key lists the namespaces it may use)
    def insert_key(self, key: ApiKey, key_hash: str) -> None: ...
    def get_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key and the stored sha256 hex of its secret."""
        ...

    def list_keys(self, *, include_revoked: bool = False) -> list[ApiKey]: ...
    def revoke_key(self, key_id: str, *, now: datetime) -> ApiKey: ...
    def touch_key(self, key_id: str, *, now: datetime) -> None: ...
    def has_keys(self) -> bool: ...

    # housekeeping
    def stats(self, namespaces: Sequence[str]) -> StoreStats: ...
    def namespaces(self) -> list[str]: ...


def migration_scripts(backend: str) -> list[tuple[int, str]]:
    """Numbered migrations for a backend: ``[(number, sql), …]`` in order."""
    folder = resources.files("memloci.storage").joinpath("sql", backend)
    out: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            out.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(out)
