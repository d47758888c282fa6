"""Domain types (layer: models): pydantic records shared by every layer; no I/O.

Scores are *higher is better* everywhere. Times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

import re
import secrets
import string
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memloci.errors import ValidationError
from memloci.kinds import FactType as FactType
from memloci.kinds import NodeType as NodeType
from memloci.kinds import Scope as Scope

ALPHABET = string.ascii_letters + string.digits
NAMESPACE_RE = re.compile(r"^[a-z][a-z0-9-]*$")
ID_RE = re.compile(r"^[A-Za-z0-9]{8}$")
KNOWN_CATEGORIES = ("context", "general", "person", "preference", "project")
CONTENT_MIN, CONTENT_MAX = 5, 500  # versioned-memory tool bounds
TURN_MAX = 20_000  # hard bound for a conversation turn / any stored content


def short_id() -> str:
    """A fresh 8-character id (A–Z a–z 0–9); callers check for collisions."""
    return "".join(secrets.choice(ALPHABET) for _ in range(8))


def utcnow() -> datetime:
    return datetime.now(UTC)


NODE_ORDERS = (
    "created",
    "-created",
    "event",
    "-event",
    "category",
    "confidence",
    "-confidence",
    "rowid",
    "protected",
)
"""The orders ``Store.list_nodes`` knows (``-``: descending; ties by creation).
``protected``: protected nodes (decay rate 0) first, then the most recently written
(``updated_at`` descending), ties by id — the facts ``context()`` keeps first."""


SCOPE_ORDER = (Scope.SESSION, Scope.USER, Scope.AGENT, Scope.GLOBAL)


class SourceType(StrEnum):
    CONVERSATION = "conversation"
    TOOL_RESULT = "tool_result"
    EXTRACTION = "extraction"
    CONSOLIDATION = "consolidation"
    USER = "user"
    IMPORT = "import"


class EdgeType(StrEnum):
    TEMPORAL = "temporal"
    CAUSAL = "causal"
    ENTITY = "entity"
    DERIVED_FROM = "derived_from"
    SUPERSEDES = "supersedes"


class EntityType(StrEnum):
    PERSON = "person"
    PROJECT = "project"
    ORGANIZATION = "organization"
    PLACE = "place"
    CONCEPT = "concept"
    TOOL = "tool"


class ProcedureType(StrEnum):
    WORKFLOW_GRAPH = "workflow_graph"
    PROMPT_TEMPLATE = "prompt_template"
    CODE_SNIPPET = "code_snippet"
    TOOL_SEQUENCE = "tool_sequence"


def check_namespace(value: str) -> str:
    """Validate a namespace name (``^[a-z][a-z0-9-]*$``, at most 64 chars)."""
    if not isinstance(value, str) or len(value) > 64 or not NAMESPACE_RE.match(value):
        raise ValidationError(
            f"invalid namespace {value!r}",
            hint="use lower-case letters, digits and '-', starting with a letter",
        )
    return value


def check_id(value: str) -> str:
    if not isinstance(value, str) or not ID_RE.match(value):
        raise ValidationError(
            f"invalid memory id {value!r}", hint="ids are 8 letters/digits, e.g. a1B2c3D4"
        )
    return value


def sanitize_category(value: str | None) -> str:
    """Lower-case, non-alphanumerics to ``_`` (letters and digits of any script stay:
    "Préférences" → ``préférences``, "Работа" → ``работа``); empty → ``general``."""
    if value is None:
        return "general"
    cleaned = re.sub(r"[\W_]+", "_", str(value).strip().lower()).strip("_")
    if len(cleaned) > 50:
        raise ValidationError("category is longer than 50 characters")
    return cleaned or "general"


def normalize_key(value: str) -> str:
    """Fuzzy key form: spaces, ``_`` and ``-`` are equivalent; case-insensitive."""
    return re.sub(r"[\s_\-]+", "_", value.strip().lower()).strip("_")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", use_enum_values=False, defer_build=True)


class EpisodeDetails(_Record):
    """Structured fields an episode may carry."""

    trigger: dict[str, Any] | None = None
    conversation: list[dict[str, Any]] | None = None
    actions: list[dict[str, Any]] | None = None
    outcome: dict[str, Any] | None = None  # success, final_output, error
    started_at: datetime | None = None
    ended_at: datetime | None = None
    duration_ms: float | None = None
    feedback: dict[str, Any] | None = None  # rating, comment


class ProcedureDetails(_Record):
    """Trigger conditions and performance tracking of a learned procedure."""

    procedure_type: ProcedureType = ProcedureType.WORKFLOW_GRAPH
    triggers: dict[str, Any] = Field(default_factory=dict)  # e.g. {"goal_contains": ["weather"]}
    times_used: int = 0
    success_rate: float | None = None
    avg_duration_ms: float | None = None


class MemoryNode(_Record):
    """One memory: an episode (conversation turn), fact, procedure or opinion."""

    id: str
    namespace: str = "default"
    type: NodeType
    content: str
    key: str | None = None
    value: Any = None
    category: str = "general"
    subject: str | None = None
    fact_type: FactType | None = None
    scope: Scope = Scope.USER
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    speaker: str | None = None
    event_time: datetime
    created_at: datetime
    updated_at: datetime
    valid_from: datetime
    valid_until: datetime | None = None
    confidence: float = 1.0
    times_confirmed: int = 0
    times_contradicted: int = 0
    access_count: int = 0
    last_accessed: datetime | None = None
    decay_rate: float = 0.1
    source_type: SourceType = SourceType.USER
    source_role: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    version: int = 1
    episode: EpisodeDetails | None = None
    procedure: ProcedureDetails | None = None
    consolidated_at: datetime | None = None
    embedded: bool = False

    @property
    def is_current(self) -> bool:
        return self.valid_until is None


class MemoryVersion(_Record):
    node_id: str
    version: int
    content: str
    value: Any = None
    source_session: str | None = None
    created_at: datetime


class Edge(_Record):
    id: str
    namespace: str = "default"
    source_id: str
    target_id: str
    relation: EdgeType
    predicate: str | None = None
    weight: float = 1.0
    confidence: float = 1.0
    valid_from: datetime
    valid_until: datetime | None = None
    evidence: list[str] = Field(default_factory=list)
    created_at: datetime


class Entity(_Record):
    id: str
    namespace: str = "default"
    canonical_name: str
    type: EntityType = EntityType.CONCEPT
    aliases: list[str] = Field(default_factory=list)
    summary: str | None = None
    first_seen: datetime
    last_seen: datetime
    mention_count: int = 1
    attributes: dict[str, Any] = Field(default_factory=dict)


class MemoryUser(_Record):
    """A person the agent talks to, possibly known on several channels."""

    id: str  # canonical, e.g. "telegram:12345"
    namespace: str = "default"
    display_name: str | None = None
    identifiers: dict[str, str] = Field(default_factory=dict)  # channel -> id
    preferences: dict[str, Any] = Field(default_factory=dict)
    conversation_count: int = 0
    last_seen: datetime | None = None
    merged_into: str | None = None
    created_at: datetime


class ThreadMessage(_Record):
    role: str
    content: str
    created_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)


class Thread(_Record):
    """Short-term conversation memory, keyed by user + chat + agent."""

    id: str
    namespace: str = "default"
    user: str | None = None
    agent: str | None = None
    messages: list[ThreadMessage] = Field(default_factory=list)
    summary: str | None = None
    created_at: datetime
    updated_at: datetime
    message_count: int = 0  # listings leave ``messages`` empty and give only the count

    @model_validator(mode="after")
    def _count_messages(self) -> Thread:
        if self.messages:
            self.message_count = len(self.messages)
        return self


class SearchHit(_Record):
    """A search result: the memory, its fused score and why it was found."""

    memory: MemoryNode
    score: float
    strategies: dict[str, int] = Field(default_factory=dict)  # strategy -> 1-based rank
    why: str = ""


class ContextItem(_Record):
    """One item of a context block: the lines it shows, the memories behind them, its
    relevance (the search score; 1.0 for what the cacheable part always shows) and why
    it is in the block."""

    lines: list[str]
    memory_ids: list[str] = Field(default_factory=list)
    score: float = 1.0
    tokens: int = 0
    why: str = ""


class ContextSection(_Record):
    """A section of a context block: its title, whether it is in the cacheable part,
    its tokens (title included) and its items."""

    title: str
    cacheable: bool
    tokens: int
    items: list[ContextItem] = Field(default_factory=list)


class ContextReport(_Record):
    """A context block and how it was composed: the two parts (``cacheable`` first), the
    budget and the tokens used (by :func:`memloci.context.estimate_tokens`), each
    section with its items, and the relevance threshold the dynamic part applied."""

    block: str
    cacheable: str
    dynamic: str
    budget: int
    tokens: int
    threshold: float
    sections: list[ContextSection] = Field(default_factory=list)
    left_out: list[ContextItem] = Field(default_factory=list)


class WriteResult(_Record):
    """What an explicit write did: ``created``, ``confirmed``, ``updated``, ``corrected``…"""

    action: str
    memory: MemoryNode
    message: str
    similar: list[MemoryNode] = Field(default_factory=list)


class StoreStats(_Record):
    nodes_by_type: dict[str, int]
    current_by_type: dict[str, int]
    edges_by_type: dict[str, int]
    entities: int
    users: int
    pending_embeddings: int
    size_bytes: int
    embedding_model: str | None
    dimension: int | None
    namespaces: list[str]
    orphans: int = 0  # current facts/opinions with no edge and no entity link
    last_maintenance: datetime | None = None
    pending_sessions: int = 0  # sessions with episodes not consolidated yet


class ApiKey(_Record):
    """An API key's record (never its secret or hash). ``namespaces == ["*"]``: all."""

    id: str
    name: str
    namespaces: list[str]
    can_write: bool = True
    admin: bool = False
    created_at: datetime
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None

    def allows(self, namespace: str, write: bool) -> bool:
        """Whether this key may read (``write=False``) or write ``namespace``."""
        if self.revoked_at is not None or (write and not self.can_write):
            return False
        return "*" in self.namespaces or namespace in self.namespaces


class RelatedEntity(_Record):
    """An entity mentioned together with another; ``weight`` = memories mentioning both."""

    entity: Entity
    weight: int


class EntityInfo(_Record):
    """An entity, the current memories that mention it and the entities seen with it."""

    entity: Entity
    memories: list[MemoryNode] = Field(default_factory=list)
    related: list[RelatedEntity] = Field(default_factory=list)


class Explanation(_Record):
    """Where a memory comes from: its versions, what it replaced and what replaced it,
    the episodes it was derived from, its entities and edges."""

    memory: MemoryNode
    versions: list[MemoryVersion] = Field(default_factory=list)
    supersedes: list[MemoryNode] = Field(default_factory=list)  # newest first
    superseded_by: MemoryNode | None = None
    sources: list[MemoryNode] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)


class GraphNode(_Record):
    id: str
    label: str
    kind: Literal["entity", "memory"]
    type: str  # the entity type or the memory type


class GraphLink(_Record):
    source: str
    target: str
    relation: str


class GraphView(_Record):
    """A small graph for display: nodes and the links between them."""

    nodes: list[GraphNode] = Field(default_factory=list)
    links: list[GraphLink] = Field(default_factory=list)


# ---------------------------------------------------------------------- knowledge tier
class KnowledgeSource(_Record):
    """A file in the knowledge tier (read-only RAG documents beside the memories).

    ``id`` is stable (derived from the absolute ``path``); ``collection`` names the
    knowledge base it belongs to inside its namespace; ``embedding_model`` is None when
    its chunks were stored without vectors (full-text search only).
    """

    id: str
    namespace: str
    collection: str = "default"
    path: str
    title: str = ""
    content_hash: str
    mtime: datetime | None = None
    size_bytes: int = 0
    chunk_count: int = 0
    embedding_model: str | None = None
    added_at: datetime
    updated_at: datetime


class KnowledgeChunk(_Record):
    """A piece of a knowledge source: ``heading`` is its heading path ("A > B"),
    ``start_char`` / ``end_char`` locate ``text`` in the decoded file."""

    id: str  # "<source id>-<ordinal>"
    namespace: str
    source_id: str
    collection: str = "default"
    ordinal: int
    text: str
    heading: str = ""
    start_char: int
    end_char: int
    embedding_model: str | None = None


class KnowledgeHit(_Record):
    """A knowledge chunk found for a query, best first.

    ``score`` is higher-is-better: the cosine similarity of query and chunk when an
    embedder is configured (``match == "vector"``); without one, full-text relevance
    squashed into 0–1 as ``b / (1 + b)`` with ``b = -bm25`` (``match == "fulltext"``). A
    chunk holding the whole query word for word scores 1.0 (``match == "fulltext"``).
    """

    chunk_id: str
    text: str
    heading: str = ""
    source_id: str
    path: str
    title: str = ""
    collection: str = "default"
    namespace: str
    ordinal: int
    score: float
    match: Literal["vector", "fulltext"] = "vector"


# Plain value types every layer passes around (the storage contract takes them, the
# service builds them, the interfaces read them): they live here, not in storage.

T = TypeVar("T")


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
    subject: str | None = None  # exactly this subject, case-insensitive


@dataclass(frozen=True)
class KeyPage(Generic[T]):
    """One page: its rows, the total of the filter read in the same snapshot, and the
    cursor of the page after it (None on the last page)."""

    items: list[T]
    total: int
    next_cursor: str | None


@dataclass(frozen=True)
class ThreadFilter:
    """Which conversation threads a list reads: those of ``namespace``, of that ``user``
    and ``agent`` when given (exactly)."""

    namespace: str
    user: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class EntityFilter:
    """Which entities a list reads: those of ``namespace``, of that ``type`` when given,
    with ``query`` in a name or alias when given (any case)."""

    namespace: str
    type: str | None = None
    query: str | None = None


@dataclass(frozen=True)
class UserFilter:
    """Which memory users a list reads: those of ``namespace``, with ``query`` in the id
    or display name when given (any case)."""

    namespace: str
    query: str | None = None


@dataclass(frozen=True)
class PageRequest:
    """Which page of a paged list to read: at most ``limit`` rows, starting strictly
    after the row ``cursor`` holds the key of (the ``next_cursor`` of the page before;
    None: the first row), then ``offset`` rows further on."""

    limit: int = 50
    offset: int = 0
    cursor: str | None = None


@dataclass
class Health:
    """What :meth:`Store.doctor` found and, with ``repair``, fixed. Each list names the
    damaged things found (empty: sound)."""

    backend: str
    integrity: list[str] = field(default_factory=list)  # the file's own check (pages)
    fulltext: list[str] = field(default_factory=list)  # full-text indexes found damaged
    vectors: list[str] = field(default_factory=list)  # memories whose vector is damaged
    entity_vectors: list[str] = field(default_factory=list)  # entities alike
    json: list[str] = field(default_factory=list)  # "table.column of what": not readable
    repaired: bool = False
    notes: list[str] = field(default_factory=list)  # what a repair did, what is left

    @property
    def damaged(self) -> bool:
        """Whether anything damaged was found."""
        return any((self.integrity, self.fulltext, self.vectors, self.entity_vectors, self.json))

    @property
    def sound(self) -> bool:
        """Whether the store is sound now: nothing found, or all of it repaired (a damaged
        page is never repaired here)."""
        return not self.damaged or (self.repaired and not self.integrity)


@dataclass(frozen=True)
class StoreGauges:
    """What a server's ``/metrics`` reads from its store, cheaply, across namespaces:
    its size on disk (SQLite: the file with its journal; PostgreSQL:
    ``pg_database_size``), the memories waiting for their vector, and (PostgreSQL) the
    connection pool's figures (``psycopg_pool``'s ``get_stats()``)."""

    size_bytes: int
    pending_embeddings: int
    pool: dict[str, int] = field(default_factory=dict)
