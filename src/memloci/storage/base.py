"""The storage contract (layer: storage).

Every backend implements :class:`Store`. Every method is bounded by namespace:
there is no call that reads or writes across namespaces unless the caller
lists them in :class:`NodeFilter.namespaces`. Scores returned by search
primitives are *higher is better*.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from memloci.models import (
    ApiKey,
    Edge,
    Entity,
    KnowledgeChunk,
    KnowledgeHit,
    KnowledgeSource,
    MemoryNode,
    MemoryUser,
    MemoryVersion,
    NodeType,
    StoreStats,
    Thread,
)
from memloci.models import Health as Health
from memloci.models import NodeFilter as NodeFilter
from memloci.models import StoreGauges as StoreGauges
from memloci.storage.paging import PagedReads

# a chat without session ids: a turn that names its speaker (or role) is linked to its
# owner's previous such session-less turn when their times are at most PAUSE seconds apart,
# looked for among the namespace's newest RECENT_LOOSE of them (adding a turn stays one
# short read); a turn without a speaker is a note on its own and is never chained
PAUSE = 3 * 3600.0
RECENT_LOOSE = 200

# an entity's memories "newest first" are looked for among its last NEWEST_LINKED links
# (before the caller's filter): a speaker linked to every turn they said, or a name many
# users mention, would otherwise cost a scan of all of them on every such search
NEWEST_LINKED = 500


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


@dataclass(frozen=True)
class PendingSession:
    """A session with episodes not consolidated yet (``episodes`` of them). ``session``
    None: the turns ``user`` and ``agent`` stored without a session, one such group per
    owner (consolidated like a session of their own)."""

    namespace: str
    session: str | None
    user: str | None
    agent: str | None
    episodes: int

    @property
    def label(self) -> str:
        """The session id, or for turns stored without one ``(no session: user u1)``."""
        if self.session is not None:
            return self.session
        owner = ", ".join(
            f"{kind} {who}" for kind, who in (("user", self.user), ("agent", self.agent)) if who
        )
        return f"(no session: {owner})" if owner else "(no session)"


def pending_groups(
    namespace: str, rows: Sequence[tuple[str | None, str | None, str | None, int]]
) -> list[PendingSession]:
    """``pending_sessions`` from rows ``(session, user, agent, episodes)`` oldest first:
    one entry per session (users may share a session id; the first owner seen names
    it), and one per owner for the turns stored without a session."""
    out: dict[object, PendingSession] = {}
    for session, uid, aid, count in rows:
        key: object = session if session is not None else (uid, aid)
        known = out.get(key)
        if known is None:
            out[key] = PendingSession(namespace, session, uid, aid, int(count))
        else:
            out[key] = PendingSession(
                namespace,
                session,
                known.user or uid,
                known.agent or aid,
                known.episodes + int(count),
            )
    return list(out.values())


@dataclass(frozen=True)
class DecayCandidate:
    """A current memory that decays: ``cursor`` pages on, ``base`` / ``anchor`` are its
    decay anchor (None when maintenance has not seen it yet)."""

    cursor: int
    node: MemoryNode
    base: float | None
    anchor: datetime | None


@dataclass(frozen=True)
class DecayUpdate:
    """A decayed confidence and the anchor it was computed from."""

    node_id: str
    confidence: float
    base: float
    anchor: datetime


@dataclass(frozen=True)
class Scrub:
    """What :meth:`Store.scrub` did: ``done`` when the backing files hold no deleted
    content any more; otherwise ``reason`` says what stopped it (the scrub stays due:
    :meth:`Store.scrub_due`, and a later call finishes it)."""

    done: bool
    reason: str | None = None


@dataclass(frozen=True)
class SessionState:
    """A session as consolidation records it: when it was first seen and, once its
    episodes were consolidated, when (None while pending)."""

    namespace: str
    session: str
    user: str | None
    agent: str | None
    first_seen_at: datetime
    consolidated_at: datetime | None


class MemoryStore(Protocol):
    """Memories, their versions and the edges between them."""

    # nodes
    def insert_node(self, node: MemoryNode, *, link_previous: bool = False) -> MemoryNode: ...
    def insert_nodes(self, nodes: Sequence[MemoryNode], *, link_previous: bool = False) -> None: ...
    def id_exists(self, node_id: str) -> bool: ...
    def id_namespaces(
        self, ids: Sequence[str], *, edges: bool = False, entities: bool = False
    ) -> dict[str, str]:
        """The namespace holding each known memory (``edges``: edge, ``entities``: entity)
        of ``ids``; ids are unique across the store: an import re-ids one another holds."""

    def get_node(self, namespace: str, node_id: str) -> MemoryNode | None: ...
    def get_nodes(self, namespace: str | Sequence[str], ids: Sequence[str]) -> list[MemoryNode]: ...
    def people_of(self, namespace: str | Sequence[str], ids: Sequence[str]) -> dict[str, str]:
        """Who each of ``ids`` is by: its speaker, else its subject (ids with neither, or
        not in ``namespace``, are left out). A light read for ranking many hits."""

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
    def prune_oldest(self, flt: NodeFilter, keep: int, *, now: datetime) -> int:
        """Delete all but ``keep`` of ``flt``: records ended at ``now`` first, then oldest."""

    def touch(self, namespace: str, ids: Sequence[str], *, now: datetime) -> None: ...
    def import_versions(self, versions: Sequence[MemoryVersion]) -> None: ...

    # edges
    def insert_edge(self, edge: Edge) -> None: ...
    def insert_edges(self, edges: Sequence[Edge]) -> None:
        """Write edges; a temporal one joins its turns' full-text windows (an import)."""

    def iter_edges(self, namespace: str) -> Iterator[Edge]: ...
    def iter_versions(self, namespace: str) -> Iterator[MemoryVersion]: ...
    def edges(self, namespace: str, node_id: str, relation: str | None = None) -> list[Edge]: ...
    def neighbours(
        self, namespace: str, ids: Sequence[str], relation: str
    ) -> dict[str, list[str]]: ...


class SearchStore(Protocol):
    """The embedding queue and the search primitives."""

    # embeddings
    def pending_embeddings(self, limit: int) -> list[PendingEmbedding]: ...
    def save_embeddings(
        self, items: Sequence[PendingEmbedding], vectors: npt.NDArray[np.float32]
    ) -> int: ...
    def reset_embeddings(self) -> int: ...
    def vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, bytes]:
        """The current float32 vectors (raw bytes) of those of ``ids`` that have one: not
        the vector of content since edited that waits to be embedded again."""

    # search primitives (higher score = better)
    def fulltext(self, flt: NodeFilter, match: str, limit: int) -> list[tuple[str, float]]: ...
    def match_weight(self, match: str) -> float:
        """The bm25 of a memory holding each word of ``match`` (a :meth:`fulltext`
        expression) once: the sum of the words' IDF over the whole full-text index (as
        bm25 computes it; 0 for an empty match). Fusion scales lexical evidence by it."""

    def unseen(self, words: Sequence[str]) -> list[str]:
        """Those of ``words`` that no memory of the full-text index holds in any form
        (every stem's document count is 0; a word that is only punctuation is not one):
        misspelt, or never said (``retrieval.spelling``)."""

    def vector_search(
        self, flt: NodeFilter, query: npt.NDArray[np.float32], limit: int
    ) -> list[tuple[str, float]]: ...
    def key_search(self, flt: NodeFilter, key_norm: str, limit: int) -> list[tuple[str, float]]: ...


class GraphStore(Protocol):
    """Graph walks and entity lookups for the retrieval pipeline (temporal / causal
    chains, entity neighbourhoods): every walk is bounded by the filter — hidden nodes
    are neither returned nor walked through; scores are higher-is-better."""

    def walk(
        self,
        flt: NodeFilter,
        seeds: Sequence[str],
        relation: str,
        *,
        depth: int = 1,
        direction: str = "both",
        limit: int = 200,
    ) -> list[tuple[str, str, int, int]]:
        """``(node_id, seed_id, distance, sign)`` within ``depth`` steps over current
        ``relation`` edges, breadth first; ``sign`` +1 along edges, -1 against them;
        ``direction`` is ``forward``, ``backward`` or ``both``; seeds not returned."""

    def replies(self, flt: NodeFilter, ids: Sequence[str], *, reach: int) -> dict[str, str | None]:
        """Each of ``ids``, and the turns after each through the reply to it (the next
        turn, then while someone else speaks, at most ``reach``), that someone says (a
        speaker, and not a message that says nothing) → the turn it replies to: the nearest earlier
        turn of its chain (current ``temporal`` edges, turns the filter admits) said by
        someone else, at most ``reach`` turns back; None when there is none
        (:mod:`memloci.storage.replies`)."""

    def entities_in_text(
        self, namespaces: Sequence[str], text: str, *, max_words: int = 4
    ) -> list[tuple[str, Entity]]:
        """Entities whose name or alias occurs in ``text`` as whole words (any case):
        ``(matched name, entity)``, longest names first."""

    def people_named(
        self, namespaces: Sequence[str], prefixes: Sequence[str], limit: int = 20
    ) -> list[Entity]:
        """Person entities with a name or alias that begins with one of ``prefixes``
        (lookup form: :func:`memloci.storage.names.name_norm`), most mentioned first, at
        most ``limit`` (read through the name index, not by scanning the names)."""

    def entity_fulltext(
        self, flt: NodeFilter, entity_ids: Sequence[str], match: str, limit: int
    ) -> list[tuple[str, float]]:
        """Nodes linked to any of ``entity_ids``, ranked by the FTS5 ``match`` (empty:
        newest first, score 0, among the last :data:`NEWEST_LINKED` links)."""

    def entity_neighbours(
        self, flt: NodeFilter, node_ids: Sequence[str], *, max_links: int, limit: int = 200
    ) -> list[tuple[str, str, str]]:
        """``(node_id, via node_id, entity_id)``: other nodes sharing an entity linked to
        at most ``max_links`` nodes with ``node_ids``."""

    def mention_texts(self, ids: Sequence[str]) -> list[tuple[str, str, str | None, str]]:
        """``(id, namespace, about, content)`` of the current episodes and facts among
        ``ids``, for linking them to the entities they are about: ``about`` is an
        episode's speaker, a fact's subject."""


class PeopleStore(Protocol):
    """Memory users, conversation threads and API keys."""

    # people: memory users (an upsert replaces the row; channel ids are indexed)
    def upsert_user(self, user: MemoryUser) -> MemoryUser: ...
    def get_user(self, namespace: str, user_id: str) -> MemoryUser | None: ...
    def list_users(
        self, namespace: str, limit: int = 100, offset: int = 0, *, query: str | None = None
    ) -> list[MemoryUser]: ...
    def count_users(self, namespace: str, *, query: str | None = None) -> int: ...
    def find_user(self, namespace: str, channel: str, identifier: str) -> MemoryUser | None:
        """A user holding that channel id (not following ``merged_into``; unmerged first)."""

    def delete_users(self, namespace: str, ids: Sequence[str]) -> int: ...
    def reassign_user(self, namespace: str, source_id: str, target_id: str) -> int:
        """Move memories (with their full-text owner) and threads of one user to another."""

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

    # API keys (not namespaced: each key lists the namespaces it may use)
    def insert_key(self, key: ApiKey, key_hash: str) -> None: ...
    def get_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key and the stored sha256 hex of its secret."""

    def list_keys(self, *, include_revoked: bool = False) -> list[ApiKey]: ...
    def revoke_key(self, key_id: str, *, now: datetime) -> ApiKey: ...
    def touch_key(self, key_id: str, *, now: datetime) -> None: ...
    def has_keys(self) -> bool: ...


class EntityStore(Protocol):
    """Entities and their links to memories."""

    # entities and their links to memories (node_entities)
    def insert_entity(self, entity: Entity) -> Entity:
        """Store a new entity (a fresh id if the given one is taken); returns it."""

    def update_entity(self, entity: Entity) -> Entity: ...
    def get_entity(self, namespace: str, entity_id: str) -> Entity | None: ...
    def find_entity(self, namespace: str, name: str) -> Entity | None:
        """By canonical name or alias, case-insensitive; a canonical match wins."""

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
    def linked_nodes(
        self, flt: NodeFilter, node_ids: Sequence[str], entity_ids: Sequence[str]
    ) -> dict[str, set[str]]:
        """Which of ``node_ids`` (visible through ``flt``) are linked to any of
        ``entity_ids``: node id → the ``entity_ids`` it is linked to."""

    def entity_nodes(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 20
    ) -> list[MemoryNode]: ...
    def entity_links_seen(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 200
    ) -> list[tuple[str, bool]]:
        """The memories of ``flt``'s namespaces linked to an entity most recently (its last
        ``limit`` links, whoever owns them, current or not), newest first, each with
        whether ``flt`` sees it: one light read that tells a shared entity apart."""

    def related_entities(
        self, flt: NodeFilter, entity_id: str, *, limit: int = 20
    ) -> list[tuple[Entity, int]]: ...


class JobStore(Protocol):
    """Consolidation and maintenance: sessions, claims, decay and named locks."""

    # consolidation and maintenance: sessions, episode claims, decay anchors, entity name
    # vectors, causal pairs and named locks shared by every process on the store
    def register_session(
        self,
        namespace: str,
        session: str,
        *,
        user: str | None,
        agent: str | None,
        now: datetime,
    ) -> None:
        """Record a session the first time it is seen (no-op when known)."""

    def pending_sessions(
        self, namespace: str, *, user: str | None = None, limit: int = 1000
    ) -> list[PendingSession]:
        """Sessions with unconsolidated episodes, oldest first, and per owner the
        unconsolidated turns stored without a session (``session`` None); see
        :func:`pending_groups`."""

    def count_pending_sessions(self, namespaces: Sequence[str]) -> int:
        """How many entries :meth:`pending_sessions` would list over ``namespaces``."""

    def session_episodes(
        self,
        namespace: str,
        session: str | None,
        *,
        limit: int,
        user: str | None = None,
        agent: str | None = None,
    ) -> list[MemoryNode]:
        """Unconsolidated episodes of a session (forgotten ones too), oldest first;
        ``session`` None: those ``user`` and ``agent`` (exactly: None is no user) stored
        without a session."""

    def claim_episodes(self, namespace: str, ids: Sequence[str], *, now: datetime) -> int:
        """Mark episodes consolidated unless they already are; returns how many it marked."""

    def finish_session(
        self,
        namespace: str,
        session: str,
        *,
        user: str | None,
        agent: str | None,
        now: datetime,
    ) -> None:
        """Record that a session was consolidated at ``now``."""

    def decay_candidates(
        self, namespace: str, type: NodeType, *, after: int, limit: int
    ) -> list[DecayCandidate]:
        """Current memories of ``type`` with a decay rate > 0, in ``cursor`` order."""

    def apply_decay(
        self,
        namespace: str,
        updates: Sequence[DecayUpdate],
        forget: Sequence[str],
        *,
        now: datetime,
    ) -> None:
        """Store decayed confidences (not an edit: ``updated_at`` stays) and soft-delete
        ``forget``; episodes and protected memories are never touched."""

    def drop_orphans(self) -> int: ...
    def entities_to_enrich(
        self, namespace: str, *, min_mentions: int, limit: int
    ) -> list[Entity]: ...
    def entity_vectors(self, namespace: str, model: str) -> dict[str, bytes]: ...
    def save_entity_vector(
        self, namespace: str, entity_id: str, model: str, vector: bytes
    ) -> None: ...
    def profile_vectors(self, namespace: str, model: str) -> dict[str, tuple[str, bytes]]:
        """Entity id → (digest of the profile text, float32 vector bytes) of the entities
        of ``namespace`` whose profile has a vector of ``model``."""

    def save_profile_vector(
        self, namespace: str, entity_id: str, model: str, digest: str, vector: bytes
    ) -> None: ...
    def temporal_pairs(
        self, namespace: str, *, after: int, limit: int
    ) -> list[tuple[int, str, str]]:
        """``(cursor, earlier id, later id)`` of consecutive episodes after ``cursor``."""

    def acquire_lock(
        self,
        name: str,
        owner: str,
        *,
        now: datetime,
        ttl: timedelta,
        stale: Callable[[str], bool] | None = None,
    ) -> bool:
        """Take (or renew) a named lock in a write transaction; False if another owner
        holds it and it has not expired, unless ``stale(holder)`` says that owner is gone
        (a process that died on this host): then it is taken over, the check and the
        takeover atomic (a holder that changed meanwhile is not taken)."""

    def lock_holder(self, name: str, *, now: datetime) -> tuple[str, datetime] | None: ...
    def release_lock(self, name: str, owner: str) -> None: ...


class KnowledgeStore(Protocol):
    """The knowledge tier: RAG sources and their chunks."""

    # knowledge tier: read-only RAG sources (files) and their chunks, beside the memories.
    # Bounded by namespace like everything else; search scores are higher-is-better
    # (cosine for vectors, ``-bm25`` for full text).
    def knowledge_source(self, namespace: str, source_id: str) -> KnowledgeSource | None: ...
    def knowledge_sources(
        self, namespace: str, *, collection: str | None = None
    ) -> list[KnowledgeSource]: ...
    def knowledge_chunks(self, namespace: str, source_id: str) -> list[KnowledgeChunk]: ...
    def replace_knowledge(
        self,
        source: KnowledgeSource,
        chunks_: Sequence[KnowledgeChunk],
        vectors: npt.NDArray[np.float32] | None,
    ) -> None:
        """Store a source and its chunks (with vectors from ``source.embedding_model``, or
        none), replacing whatever the source held before, in one transaction."""

    def delete_knowledge(self, namespace: str, source_ids: Sequence[str]) -> int:
        """Delete sources with their chunks; returns how many sources were deleted."""

    def knowledge_fulltext(
        self,
        namespaces: Sequence[str],
        match: str,
        *,
        limit: int,
        collections: Sequence[str] | None = None,
    ) -> list[KnowledgeHit]: ...
    def knowledge_vector_search(
        self,
        namespaces: Sequence[str],
        query: npt.NDArray[np.float32],
        *,
        model: str,
        limit: int,
        collections: Sequence[str] | None = None,
    ) -> list[KnowledgeHit]:
        """Chunks with vectors from ``model``, most similar first (cosine)."""


class Store(Protocol):
    """What every storage backend provides: store-wide calls (lifecycle, privacy,
    housekeeping) here, and one object per slice of the contract (``store.memories``,
    ``store.search``, …). Capability flags, never ``None`` returns."""

    supports_vectors: bool

    # the slices
    @property
    def memories(self) -> MemoryStore: ...
    @property
    def search(self) -> SearchStore: ...
    @property
    def graph(self) -> GraphStore: ...
    @property
    def people(self) -> PeopleStore: ...
    @property
    def entities(self) -> EntityStore: ...
    @property
    def jobs(self) -> JobStore: ...
    @property
    def knowledge(self) -> KnowledgeStore: ...
    @property
    def pages(self) -> PagedReads:
        """Paged lists (``page_nodes``, …): :class:`~memloci.storage.paging.PagedReads`."""

    # lifecycle / metadata
    def close(self) -> None: ...
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def bind_embedder(self, model_id: str, dimension: int) -> None: ...
    def schema_version(self) -> int: ...
    def batch(self) -> AbstractContextManager[None]:
        """Several writes as one transaction: all land or none (nested writes join it).
        Reads made inside it by the same thread see the transaction's own writes."""

    def exclusive(self, key: str) -> AbstractContextManager[None]:
        """One write transaction for a check-then-write (dedupe): it holds a lock on
        ``key`` from its start to its commit, serialised with every other
        ``exclusive(key)`` on the same key across threads, processes and servers;
        reads made inside it by the same thread see every write committed before the
        lock was taken plus the transaction's own writes (vectors included). Inside
        ``batch()`` it joins the open transaction and takes the lock there. SQLite:
        the file's one writer lock (``BEGIN IMMEDIATE``); PostgreSQL: an advisory
        transaction lock on ``key``."""

    # privacy: forget a person, leave no deleted text behind
    def delete_user_data(self, namespace: str, user_id: str) -> dict[str, int]:
        """Remove everything stored for one person in one namespace, in ONE transaction
        (all of it or nothing), and return counts per kind.

        The person is ``user_id`` plus every memory user merged into it (transitively).
        Removed: their memories (``nodes.user_id`` is one of them; every type and scope,
        current, forgotten or superseded) with their versions, vectors, full-text rows,
        decay anchors, edges touching them and entity links; entities their memories
        linked that no remaining memory links; their threads; their user records and
        channel identifiers; consolidation state of their sessions (a session also
        holding another user's memories keeps it). Kept turns next to a removed one lose
        their copy of its text (``context`` / ``next_context``). Other namespaces and
        other users are never touched; in-process vector caches drop the removed
        vectors. Keys of the report: ``users, identifiers, memories, versions, vectors,
        edges, entity_links, entities, threads, sessions, decay_states,
        neighbours_blanked``. Deleted text may stay in free space until :meth:`scrub`;
        when something was removed the same transaction marks a scrub due
        (:meth:`scrub_due`).
        """

    def scrub(self) -> Scrub:
        """Make deleted text unrecoverable from the backing files (run it after a
        deletion that must not leave traces); never waits long for other connections.
        SQLite: secure delete is on for every connection; this merges the full-text
        indexes (deleted terms leave them), vacuums the file (stale copies of rows
        b-tree rebalancing moved, slack written before secure delete was on) and
        checkpoints + truncates the WAL. Writers wait for the vacuum (it rewrites the
        file), never for another connection's reads: when a reader holds a snapshot
        from before the deletion (its old pages must stay readable) the scrub gives up
        at once, before the vacuum, and says so. PostgreSQL: ``VACUUM`` of the tables
        holding memories, versions, vectors, edges, entities, users and threads (dead
        tuples become free space; WAL segments are recycled by the server, outside the
        store's control; writers are not blocked). ``Scrub(done=False, reason=…)`` when
        it could not finish (call again later); must not run inside ``batch()``."""

    def doctor(self, *, repair: bool = False) -> Health:
        """Look for damage a reader skips (see :mod:`memloci.storage.faults`): vectors of
        the wrong size, JSON columns that are not readable, a damaged full-text index,
        and (SQLite) the file's own integrity check. With ``repair``, in one transaction:
        damaged vectors are dropped and their memories marked to be embedded again (the
        caller embeds what is pending), unreadable JSON is reset to its empty value
        (``{}``, ``[]`` or null) with a note each, the full-text index is rebuilt from
        the memories. A damaged page is reported, never repaired (restore a backup).
        PostgreSQL types its vectors and JSON, so only its own damage could occur there:
        it reports nothing to repair."""

    def scrub_due(self) -> bool:
        """Whether a :meth:`delete_user_data` that removed something has not been
        scrubbed yet (by any process: the mark is kept in the store)."""

    # housekeeping
    def stats(self, namespaces: Sequence[str]) -> StoreStats: ...
    def gauges(self) -> StoreGauges:
        """Size, embedding backlog and pool figures of the whole store (for ``/metrics``)."""

    def namespaces(self) -> list[str]: ...

    # inventory: what a whole-store copy (``memloci migrate``) needs to read
    def record_namespaces(self) -> list[str]:
        """Every namespace holding any record (memories, edges, users, threads,
        entities, consolidation sessions, knowledge sources), sorted; a superset of
        :meth:`namespaces`."""

    def sessions(self, namespace: str) -> list[SessionState]:
        """Every session recorded for consolidation in ``namespace`` (pending and
        consolidated), ordered by ``first_seen_at`` then session id."""

    def knowledge_vectors(self, namespace: str, source_id: str) -> dict[str, bytes]:
        """Chunk id → float32 little-endian vector bytes for the chunks of a source
        that have a vector (from ``source.embedding_model``); chunks without one are
        left out."""


def migration_scripts(backend: str) -> list[tuple[int, str]]:
    """Numbered migrations for a backend: ``[(number, sql), …]`` in order."""
    folder = resources.files(f"memloci.storage.{backend}").joinpath("sql")
    out: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            out.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(out)
