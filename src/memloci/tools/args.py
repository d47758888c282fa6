"""Agent tool arguments (layer: tools): one pydantic model per tool, validated before any write.

Every field carries a description (it becomes the JSON schema the model sees). ``null``
means "not given" and, for optional text fields, so does an empty string — models send
both, and OpenAI's strict mode sends ``null`` for every argument it leaves out.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from memloci.models import (
    CONTENT_MAX,
    CONTENT_MIN,
    ID_RE,
    TURN_MAX,
    FactType,
    NodeType,
    ProcedureType,
)

MemoryKind = Literal[
    "facts",
    "procedures",
    "episodes",
    "all",
    "semantic",
    "opinion",
    "procedural",
    "episodic",
]
KIND_TYPES: dict[str, tuple[NodeType, ...] | None] = {
    "facts": (NodeType.SEMANTIC, NodeType.OPINION),
    "procedures": (NodeType.PROCEDURAL,),
    "episodes": (NodeType.EPISODIC,),
    "all": None,
    **{t.value: (t,) for t in NodeType},  # the node types' own names work too
}


def kind_types(*kinds: str | None, default: str) -> tuple[NodeType, ...] | None:
    """The node types named by ``kinds`` (``facts``, ``semantic``, …; ``all``: None)."""
    picked = [k for k in kinds if k] or [default]
    out: list[NodeType] = []
    for k in picked:
        types = KIND_TYPES[k]
        if types is None:
            return None
        out += [t for t in types if t not in out]
    return tuple(out)


_ID_IN_TEXT = re.compile(r"^\s*\[?\s*(?:id\s*[:=]\s*)?([A-Za-z0-9]{8})\s*\]?\s*$", re.IGNORECASE)


def _plain_id(value: Any) -> Any:
    """Accept the forms a model copies from context: ``[id:a1B2c3D4]``, ``id:a1B2c3D4``."""
    if isinstance(value, str) and (m := _ID_IN_TEXT.match(value)):
        return m.group(1)
    return value


def _scalar_text(value: Any) -> Any:
    """Numbers and booleans a model sends as a fact's value are kept as text."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, int | float) else value


MemoryId = Annotated[
    str,
    StringConstraints(pattern=ID_RE.pattern),
    BeforeValidator(_plain_id),
    Field(description="8-character id of the memory, as in [id:a1B2c3D4]"),
]
FactText = Annotated[str, Field(min_length=CONTENT_MIN, max_length=CONTENT_MAX)]
KIND_HELP = (
    "facts (semantic and opinions), procedures, episodes, or all; "
    "or one node type: semantic, opinion, procedural, episodic"
)


def _a_number(annotation: Any) -> bool:
    """Whether a field takes a number and not ``true`` / ``false`` (pydantic would read
    ``"limit": true`` as 1)."""
    kinds = {annotation, *get_args(annotation)}
    return bool(kinds & {int, float}) and not kinds & {bool, Any}


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown arguments are refused, text is trimmed."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_unset(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        out = {}
        for name, value in data.items():
            field = fields.get(name)
            if value is None and field is not None:
                continue
            if isinstance(value, bool) and field is not None and _a_number(field.annotation):
                raise ValueError(f"{name}: {str(value).lower()} is not a number")
            blank = isinstance(value, str) and not value.strip()
            if blank and field is not None and not field.is_required() and field.default is None:
                continue
            out[name] = value
        return out


class RecallArgs(ToolArgs):
    query: str | None = Field(
        None,
        min_length=1,
        max_length=2000,
        description="What to look for, in words. Leave out query and key to list known facts.",
    )
    key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Key of a fact, e.g. user_timezone: exact match first, then the closest keys",
    )
    memory_type: MemoryKind | None = Field(
        None, description=f"Which memories: {KIND_HELP}. Default: facts"
    )
    memory_types: list[MemoryKind] | None = Field(
        None, max_length=8, description="Several kinds at once, e.g. ['semantic', 'procedural']"
    )
    limit: int = Field(10, ge=1, le=50, description="Maximum number of memories to return (1-50)")
    top_k: int | None = Field(None, ge=1, le=50, description="Same as limit")
    min_confidence: float = Field(
        0.5, ge=0, le=1, description="Only facts at least this certain (0-1, default 0.5)"
    )

    @model_validator(mode="after")
    def _one_limit(self) -> RecallArgs:
        both = "limit" in self.model_fields_set and self.top_k is not None
        if both and self.limit != self.top_k:
            raise ValueError("give limit or top_k, not both")
        return self

    @property
    def count(self) -> int:
        return self.top_k or self.limit

    def types(self, default: str = "facts") -> tuple[NodeType, ...] | None:
        return kind_types(self.memory_type, *(self.memory_types or ()), default=default)


class SearchMemoryArgs(RecallArgs):
    type: MemoryKind | None = Field(None, description=f"Same as memory_type: {KIND_HELP}")
    entity_name: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Only memories that mention this person, project, place or thing",
    )
    after: str | None = Field(
        None,
        max_length=40,
        description="Only memories from after: last_week, last_month, 7d or a date (YYYY-MM-DD)",
    )
    before: str | None = Field(
        None, max_length=40, description="Only memories from before: a date (YYYY-MM-DD), …"
    )

    def types(self, default: str = "facts") -> tuple[NodeType, ...] | None:
        kinds = (self.memory_type, self.type, *(self.memory_types or ()))
        return kind_types(*kinds, default=default)


class RememberArgs(ToolArgs):
    content: FactText | None = Field(
        None,
        description="The fact as one self-contained sentence, e.g. 'The user prefers dark mode' "
        f"({CONTENT_MIN}-{CONTENT_MAX} characters). May be left out when key and value are given",
    )
    key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Optional handle to look the fact up by later, e.g. user_timezone",
    )
    value: Annotated[str, BeforeValidator(_scalar_text)] | None = Field(
        None,
        max_length=CONTENT_MAX,
        description="The fact's value under key, e.g. key='color', value='blue'",
    )
    category: str | None = Field(
        None,
        max_length=50,
        description="Category, e.g. person, preference, context, project (default general)",
    )
    subject: str | None = Field(
        None, max_length=200, description="Person, project or thing the fact is about"
    )
    fact_type: FactType = Field(FactType.WORLD_KNOWLEDGE, description="Kind of fact")
    overwrite: bool = Field(
        True,
        description="If a fact with this key exists: true replaces it (and counts a "
        "confirmation), false keeps it",
    )

    @model_validator(mode="after")
    def _content_or_key_value(self) -> RememberArgs:
        if self.content is None:
            if self.key is None or self.value is None:
                raise ValueError("content is required (or key and value)")
            if not CONTENT_MIN <= len(self.text) <= CONTENT_MAX:
                raise ValueError(f"'{self.text}' must be {CONTENT_MIN}-{CONTENT_MAX} characters")
        return self

    @property
    def text(self) -> str:
        """The fact's sentence: ``content``, or ``key = value``."""
        if self.content is not None:
            return self.content
        return f"{self.key} = {self.value}"


class AddToMemoryArgs(ToolArgs):
    content: FactText = Field(description="The fact or information to remember")
    category: Literal["person", "preference", "context", "project"] = Field(
        description="Category of memory: person, preference, context, or project"
    )
    subject: str | None = Field(
        None,
        max_length=200,
        description="Optional subject/entity this memory relates to "
        "(e.g., person name, project name)",
    )


class UpdateMemoryArgs(ToolArgs):
    memory_id: MemoryId = Field(description="8-character ID of the memory to update")
    content: FactText = Field(description="The updated content for this memory")


class CorrectFactArgs(ToolArgs):
    memory_id: MemoryId = Field(description="8-character ID of the fact that is wrong")
    content: FactText = Field(description="The correct fact, replacing the wrong one")


class MemoryIdArgs(ToolArgs):
    memory_id: MemoryId


class ListMemoriesArgs(ToolArgs):
    category: str | None = Field(None, max_length=50, description="Only this category")
    memory_type: MemoryKind | None = Field(
        None, description=f"Which memories: {KIND_HELP}. Default: all"
    )
    limit: int = Field(20, ge=1, le=100, description="Maximum number to list (1-100)")


class LearnProcedureArgs(ToolArgs):
    content: FactText = Field(
        description="The instruction, policy or pattern, e.g. 'Always run tests before deploying'"
    )
    category: str | None = Field(
        None, max_length=50, description="Category, e.g. deployment (default procedure)"
    )
    procedure_type: ProcedureType | None = Field(None, description="Kind of procedure")
    triggers: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        None,
        max_length=20,
        description="Words in a goal that make this procedure apply, e.g. ['deploy']",
    )


class RecordEpisodeArgs(ToolArgs):
    content: str = Field(
        min_length=1,
        max_length=TURN_MAX,
        description="What happened: the task, decisions made, the outcome",
    )
    category: str | None = Field(
        None, max_length=50, description="Category, e.g. deployment (default episode)"
    )
    outcome: Literal["success", "failure"] | None = Field(
        None, description="Whether the task succeeded"
    )
    error: str | None = Field(None, max_length=2000, description="The error, if it failed")
    duration_ms: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="How long it took, in milliseconds"
    )


class RecordProcedureUseArgs(ToolArgs):
    memory_id: MemoryId = Field(description="8-character ID of the procedure you applied")
    success: bool | None = Field(None, description="Whether applying it worked")
    duration_ms: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="How long it took, in milliseconds"
    )


class EntityInfoArgs(ToolArgs):
    name: str = Field(
        min_length=1,
        max_length=200,
        description="Name, alias or id of a person, project, organisation, place or tool",
    )
    limit: int = Field(10, ge=1, le=50, description="Maximum memories to show (1-50)")


class NoArgs(ToolArgs):
    pass


class WeakFactsArgs(ToolArgs):
    limit: int = Field(10, ge=1, le=50, description="Maximum number of facts (1-50)")
    threshold: float = Field(
        0.3, ge=0, le=1, description="Show facts whose confidence is below this (0-1)"
    )
