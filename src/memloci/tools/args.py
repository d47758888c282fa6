"""Agent tool arguments (layer: tools): one pydantic model per tool, validated before any write.

Every field carries a description (it becomes the JSON schema the model sees). ``null``
means "not given" and, for optional text fields, so does an empty string — models send
both, and OpenAI's strict mode sends ``null`` for every argument it leaves out.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

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

MemoryKind = Literal["facts", "procedures", "episodes", "all"]
KIND_TYPES: dict[str, tuple[NodeType, ...] | None] = {
    "facts": (NodeType.SEMANTIC, NodeType.OPINION),
    "procedures": (NodeType.PROCEDURAL,),
    "episodes": (NodeType.EPISODIC,),
    "all": None,
}
_ID_IN_TEXT = re.compile(r"^\s*\[?\s*(?:id\s*[:=]\s*)?([A-Za-z0-9]{8})\s*\]?\s*$", re.IGNORECASE)


def _plain_id(value: Any) -> Any:
    """Accept the forms a model copies from context: ``[id:a1B2c3D4]``, ``id:a1B2c3D4``."""
    if isinstance(value, str) and (m := _ID_IN_TEXT.match(value)):
        return m.group(1)
    return value


MemoryId = Annotated[
    str,
    StringConstraints(pattern=ID_RE.pattern),
    BeforeValidator(_plain_id),
    Field(description="8-character id of the memory, as in [id:a1B2c3D4]"),
]
FactText = Annotated[str, Field(min_length=CONTENT_MIN, max_length=CONTENT_MAX)]
KIND_HELP = "facts (semantic and opinions), procedures, episodes, or all"


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown arguments are refused, text is trimmed."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

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
        None,
        description=f"Which memories: {KIND_HELP}. Default: all when searching, facts when listing",
    )
    limit: int = Field(10, ge=1, le=50, description="Maximum number of memories to return (1-50)")
    min_confidence: float | None = Field(
        None, ge=0, le=1, description="Only memories at least this certain (0-1); default: any"
    )


class RememberArgs(ToolArgs):
    content: FactText = Field(
        description="The fact as one self-contained sentence, e.g. 'The user prefers dark mode' "
        f"({CONTENT_MIN}-{CONTENT_MAX} characters)"
    )
    key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Optional handle to look the fact up by later, e.g. user_timezone",
    )
    category: str | None = Field(
        None,
        max_length=50,
        description="Category, e.g. person, preference, context, project (default general)",
    )
    subject: str | None = Field(
        None, max_length=200, description="Person, project or thing the fact is about"
    )
    fact_type: FactType | None = Field(None, description="Kind of fact")
    overwrite: bool = Field(
        True, description="If a fact with this key exists: true replaces it, false keeps it"
    )


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
    memory_type: MemoryKind = Field("facts", description=f"Which memories: {KIND_HELP}")
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
    outcome: Literal["success", "failure"] | None = Field(
        None, description="Whether the task succeeded"
    )
    error: str | None = Field(None, max_length=2000, description="The error, if it failed")
    duration_ms: float | None = Field(None, ge=0, description="How long it took, in milliseconds")


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
