"""Request and response bodies of the REST API (layer: interfaces).

Request models forbid unknown fields so a typo is a clear 400, not a silent
default. Deeper checks (lengths, enums, ids) happen once, in the service.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Annotated, Any, ClassVar, Generic, Self, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_validator,
)

from memloci.errors import ValidationError
from memloci.models import MemoryNode, MemoryVersion, SearchHit, StoreStats, WriteResult

T = TypeVar("T")

# ``after`` / ``before`` over REST: exactly what the OpenAPI document states (TIME_SCHEMA),
# so every value the schema allows is answered and every other one is a 400. Empty means
# no bound (a form's blank field); a phrase or a span back from now; an ISO date
# (``format: date``) or an RFC 3339 time (``format: date-time``).
TIME_PHRASE = (
    r"^(|today|yesterday|last_day|last_week|last_month|last_year"
    r"|[0-9]{1,4}_?(d|days?|w|weeks?|h|hours?))$"
)
TIME_DOC = "ISO date, RFC 3339 time, or a phrase: last_week, last_month, yesterday, today, 7d, 2w"
TIME_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": TIME_PHRASE},
        {"type": "string", "format": "date"},
        {"type": "string", "format": "date-time"},
        {"type": "null"},
    ]
}
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)


def time_bound(value: str | None, field: str) -> str | None:
    """A REST ``after`` / ``before`` as the service reads it: None for none or empty;
    the value when it is one of the forms :data:`TIME_SCHEMA` states; else a 400."""
    if value is None or value == "":
        return None
    try:
        if re.fullmatch(TIME_PHRASE, value, re.ASCII):
            return value
        if _DATE.fullmatch(value):
            date.fromisoformat(value)
            return value
        if _RFC3339.fullmatch(value):
            stamp = value.upper()
            moment = datetime.fromisoformat(stamp)  # a real day and time of day
            try:
                moment.astimezone(UTC)
            except OverflowError:  # an offset past year 1 or 9999: the end of time
                return "0001-01-01T00:00:00Z" if moment.year == 1 else "9999-12-31T23:59:59Z"
            return stamp
    except ValueError:
        pass
    raise ValidationError(
        f"{field}: cannot read time {value!r}",
        hint="use an ISO date (2024-05-01), an RFC 3339 time (2024-05-01T10:00:00Z), or "
        "last_week, last_month, yesterday, today, 7d, 2w",
    )


CURSOR_DOC = (
    "the next_cursor of the previous page: the page starts strictly after its last row, so "
    "rows written meanwhile never shift the pages (use it, not offset, on a changing list)"
)
OFFSET_DOC = "rows to skip (0–1,000,000,000); pages shift while the list changes: use cursor"


class Body(BaseModel):
    """A request body: unknown fields refused (``Flag``, ``Int``, ``Number`` and ``When``
    refuse the lax coercions — ``0`` is not ``false``, ``true`` and ``"5"`` are not
    numbers, a number is not a time — so a body matches the OpenAPI schema or is
    refused)."""

    model_config = ConfigDict(extra="forbid")


def _no_null_schema(schema: dict[str, Any], cls: type[Any]) -> None:
    """A PATCH body's schema says what :meth:`Patch._no_nulls` checks: only the fields
    ``nullable`` names may be null (the others drop the null alternative and default)."""
    nullable: frozenset[str] = getattr(cls, "nullable", frozenset())
    for name, prop in schema.get("properties", {}).items():
        alts = prop.get("anyOf")
        if name in nullable or not alts:
            continue
        rest = [a for a in alts if a.get("type") != "null"]
        prop.pop("default", None)
        if len(rest) == 1:
            del prop["anyOf"]
            prop.update(rest[0])
        else:
            prop["anyOf"] = rest
    if getattr(cls, "required_one", False):  # an empty body changes nothing: a 400
        schema["minProperties"] = 1


class Patch(Body):
    """A PATCH body: a field left out is kept; one sent as ``null`` is refused (it would
    be kept too, and the response say "updated"), unless :attr:`nullable` names it."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_no_null_schema)
    nullable: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="after")
    def _no_nulls(self) -> Self:
        nulls = sorted(f for f in self.model_fields_set - self.nullable if getattr(self, f) is None)
        if nulls:
            raise ValueError(f"{', '.join(nulls)} cannot be null: leave a field out to keep it")
        return self


def _iso_only(value: Any) -> Any:
    if value is not None and not isinstance(value, str | datetime):
        raise ValueError("give an ISO 8601 time, e.g. 2024-05-01T12:00:00Z")
    return value


def _whole(value: Any) -> Any:
    """A JSON number with no fraction (``140.0``) is an integer, as JSON Schema says."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Flag = StrictBool
Int = Annotated[int, BeforeValidator(_whole), Strict()]
Number = Annotated[float, Strict()]  # an int or a float; never a bool or a string
When = Annotated[datetime, BeforeValidator(_iso_only)]


class Page(BaseModel, Generic[T]):
    """One page of a listing: its items and the total of the same read (one snapshot).
    ``next_cursor`` continues strictly after the last item (``?cursor=``), so a list that
    changes meanwhile is paged without skipping or repeating a row; null on the last page."""

    items: list[T]
    total: int = Field(description="how many the filter matches, read with the items")
    limit: int
    offset: int
    next_cursor: str | None = Field(
        description="pass as ?cursor= for the next page (null: this is the last page)"
    )


class FactCreate(Body):
    content: str = Field(description="the fact, 5–500 characters")
    key: str | None = Field(None, description="optional stable key, e.g. 'preferred_language'")
    value: Any = Field(None, description="optional structured value for the key")
    category: str | None = Field(None, description="e.g. person, preference, context, project")
    subject: str | None = Field(None, description="who or what the fact is about")
    fact_type: str | None = Field(None, description="user_preference, world_knowledge, …")
    type: str = Field("semantic", description="semantic or opinion")
    scope: str | None = Field(None, description="user, agent, session or global")
    confidence: Number = Field(1.0, description="0–1")
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    event_time: When | None = None
    metadata: dict[str, Any] | None = None
    overwrite: Flag = Field(True, description="False: keep an existing value for the same key")


class EpisodeCreate(Body):
    content: str = Field(description="what happened, 1–20,000 characters")
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    details: dict[str, Any] | None = Field(
        None, description="trigger, actions, outcome, duration_ms, feedback"
    )
    event_time: When | None = None
    metadata: dict[str, Any] | None = None


class ProcedureCreate(Body):
    content: str = Field(description="the instruction or how-to, 5–500 characters")
    triggers: dict[str, Any] | None = None
    procedure_type: str | None = None
    category: str | None = "procedure"
    user: str | None = None
    agent: str | None = None
    scope: str | None = None
    metadata: dict[str, Any] | None = None


class ProcedureUse(Body):
    """One use of a learned procedure: how it went and how long it took (both optional)."""

    success: Flag | None = Field(None, description="whether applying it worked")
    duration_ms: Number | None = Field(
        None, ge=0, allow_inf_nan=False, description="how long it took, in ms"
    )


class TurnsCreate(Body):
    """Conversation turns for the hot path (episodes linked in order)."""

    messages: list[dict[str, Any]] = Field(
        description="[{role, content, name?}, …]: name is who said it; other fields are refused"
    )
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    event_time: When | None = None
    metadata: dict[str, Any] | None = None


class NodeUpdate(Patch):
    nullable = frozenset({"value"})  # null is a value: the memory's value set to null
    required_one: ClassVar[bool] = True  # "nothing to update" otherwise
    content: str | None = None
    value: Any = None
    category: str | None = None
    subject: str | None = None
    metadata: dict[str, Any] | None = None


class Correction(Body):
    content: str = Field(description="the corrected fact; the old one is superseded, not lost")
    value: Any = None


class BatchDelete(Body):
    ids: list[str] = Field(description="memory ids (all must exist, or nothing is deleted)")
    hard: Flag = Field(False, description="True: purge with history instead of soft delete")


class BatchDeleted(BaseModel):
    deleted: int
    ids: list[str]


class Deleted(BaseModel):
    id: str
    deleted: Flag = True
    hard: Flag = False


class MemoryDetail(BaseModel):
    memory: MemoryNode
    versions: list[MemoryVersion]


ONE_OR_MORE = "one value, or a list of them (any matches)"


class SearchRequest(Body):
    query: str
    namespaces: list[str] | None = Field(
        None, description="several namespaces (all checked)", min_length=1
    )
    user: str | None = Field(None, description="the reader: their memories plus shared ones")
    agent: str | None = None
    session: str | None = None
    owner: str | None = Field(None, description="only memories recorded for this user")
    in_session: str | None = Field(None, description="only memories recorded in this session")
    type: list[str] | str | None = Field(None, description=ONE_OR_MORE)
    category: list[str] | str | None = Field(None, description=ONE_OR_MORE)
    scope: list[str] | str | None = Field(None, description=ONE_OR_MORE)
    after: str | None = Field(None, description=TIME_DOC)
    before: str | None = Field(None, description=TIME_DOC)
    min_confidence: Number | None = None
    as_of: When | None = None
    k: Int = Field(10, description="results, 1–200")
    recipe: str = Field(
        "hybrid",
        description="hybrid (with the graph), core (hybrid without it), fulltext or vector",
    )

    @field_validator("type", "category", "scope", mode="after")
    @classmethod
    def _one_or_more(cls, value: list[str] | str | None, info: ValidationInfo) -> list[str] | None:
        """One value or a list of them, as ``GET /search`` takes ``?type=`` once or
        repeated; an empty ``type`` or ``scope`` list is refused (it would match nothing)."""
        if isinstance(value, str):
            return [value]
        if value is not None and not value and info.field_name != "category":
            raise ValueError("give at least one value, or leave the field out")
        return value


class SearchResponse(BaseModel):
    query: str
    hits: list[SearchHit]


class ContextRequest(Body):
    prompt: str | None = None
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    budget: Int | None = Field(None, description="token budget (default: server setting)")


class ContextResponse(BaseModel):
    context: str
    tokens: int


class ImportResult(BaseModel):
    nodes: int
    skipped: int
    versions: int
    edges: int
    users: int
    vectors_reused: int
    needs_embedding: int
    entities: int = 0
    entities_merged: int = 0  # merged by name into entities the namespace held
    links: int = 0
    threads: int = 0
    sessions: int = 0
    knowledge_sources: int = 0
    knowledge_chunks: int = 0
    chunks_to_embed: int = 0


class ChatCommand(Body):
    text: str = Field(description="a chat message, e.g. '/memory list'")
    user: str | None = None
    agent: str | None = None


class ChatAnswer(BaseModel):
    command: bool
    answer: str | None


__all__ = [
    "BatchDelete",
    "BatchDeleted",
    "ChatAnswer",
    "ChatCommand",
    "ContextRequest",
    "ContextResponse",
    "Correction",
    "Deleted",
    "EpisodeCreate",
    "FactCreate",
    "ImportResult",
    "MemoryDetail",
    "NodeUpdate",
    "Page",
    "ProcedureCreate",
    "SearchRequest",
    "SearchResponse",
    "StoreStats",
    "TurnsCreate",
    "WriteResult",
]
