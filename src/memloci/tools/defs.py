"""The agent tool registry (layer: tools): each tool defined once, exported for every API.

A :class:`ToolDef` is a name, a description, a pydantic arguments model and an async
handler. :data:`TOOLS` holds them in a stable order; :func:`openai_tools`,
:func:`anthropic_tools` and :func:`mcp_tools` render them for each API.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, NamedTuple, TypeVar

from memloci.errors import ValidationError
from memloci.tools import handlers as h
from memloci.tools.args import (
    AddToMemoryArgs,
    CorrectFactArgs,
    EntityInfoArgs,
    LearnProcedureArgs,
    ListMemoriesArgs,
    MemoryIdArgs,
    NoArgs,
    RecallArgs,
    RecordEpisodeArgs,
    RecordProcedureUseArgs,
    RememberArgs,
    SearchMemoryArgs,
    ToolArgs,
    UpdateMemoryArgs,
    WeakFactsArgs,
)
from memloci.tools.handlers import Bound
from memloci.tools.schema import JsonSchema, clean_schema

A = TypeVar("A", bound=ToolArgs)
SYSTEM_TAGS = frozenset({"system", "memory"})  # "system": always offered to the agent


class McpTool(NamedTuple):
    """What an MCP server registers: ``(name, description, input_schema)``."""

    name: str
    description: str
    input_schema: JsonSchema

    def to_dict(self) -> dict[str, Any]:
        """The MCP ``tools/list`` entry: ``{"name", "description", "inputSchema"}``."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }


@functools.cache
def _schema(model: type[ToolArgs], strict: bool) -> JsonSchema:
    return clean_schema(model, strict=strict)


@dataclass(frozen=True)
class ToolDef(Generic[A]):
    """One agent tool: ``handler(bound, args)`` returns the text the model reads."""

    name: str
    description: str
    args: type[A]
    handler: Callable[[Bound, A], Awaitable[str]]
    tags: frozenset[str] = SYSTEM_TAGS
    alias_of: str | None = None  # the tool this one mirrors (same behaviour, another name)
    read_only: bool = False

    def parameters(self, *, strict: bool = False) -> JsonSchema:
        """The arguments' JSON schema (a fresh copy; see :func:`clean_schema`)."""
        return copy.deepcopy(_schema(self.args, strict))

    def openai(self, *, strict: bool = False) -> dict[str, Any]:
        """OpenAI Chat Completions ``tools`` entry (``strict=True``: strict function calling)."""
        fn: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters(strict=strict),
        }
        if strict:
            fn["strict"] = True
        return {"type": "function", "function": fn}

    def anthropic(self) -> dict[str, Any]:
        """Anthropic Messages ``tools`` entry."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters(),
        }

    def mcp(self) -> McpTool:
        return McpTool(self.name, self.description, self.parameters())


RECALL = (
    "Search your long-term memory. With query: memories relevant to it (by words and meaning). "
    "With key: the fact stored under that key (exact, then the closest keys). With neither: "
    "the facts you know, highest confidence first. Use it before answering questions about "
    "the user or past work."
)
REMEMBER = (
    "Store a durable fact for future conversations (about the user, people, projects, "
    "preferences). Give a key to look it up exactly later; storing under an existing key "
    "updates that fact. Duplicates are recognised and confirmed instead of stored twice."
)
_DEFS: list[ToolDef[Any]] = [
    ToolDef("recall", RECALL, RecallArgs, h.recall, read_only=True),
    ToolDef(
        "search_memory",
        "Search long-term memory for facts relevant to a question, or look a fact up by "
        "key. Same as recall, plus filters by type, entity and time (after / before); "
        "type 'episodes' searches what happened in past tasks and conversations, "
        "'procedures' the learned procedures, 'all' everything.",
        SearchMemoryArgs,
        h.recall,
        alias_of="recall",
        read_only=True,
    ),
    ToolDef("remember", REMEMBER, RememberArgs, h.remember),
    ToolDef(
        "remember_fact",
        "Store a fact in long-term memory, optionally under a key (e.g. user_timezone) so it "
        "can be looked up exactly. Same as remember.",
        RememberArgs,
        h.remember,
        alias_of="remember",
    ),
    ToolDef(
        "add_to_memory",
        "Store important information for future conversations. Use this when the user "
        "shares facts about people, expresses preferences, or provides context that would "
        "be useful to remember. Ask for confirmation before storing new information.",
        AddToMemoryArgs,
        h.add_to_memory,
        alias_of="remember",
    ),
    ToolDef(
        "update_memory",
        "Update an existing memory when information has changed. Use this instead of "
        "creating a new memory when correcting outdated information.",
        UpdateMemoryArgs,
        h.update_memory,
    ),
    ToolDef(
        "correct_fact",
        "Replace a fact that was wrong. The correction gets a new id; the wrong fact is kept "
        "only as history. For information that simply changed, use update_memory.",
        CorrectFactArgs,
        h.correct_fact,
    ),
    ToolDef(
        "confirm_fact",
        "Mark a fact as confirmed: full confidence, and it stops fading over time. Use it "
        "when the user affirms something you remembered, e.g. a fact from weak_facts.",
        MemoryIdArgs,
        h.confirm_fact,
    ),
    ToolDef(
        "forget",
        "Forget a memory: it is no longer used (its history is kept). Use it when the user "
        "asks you to forget something or a memory is no longer true.",
        MemoryIdArgs,
        h.forget,
    ),
    ToolDef(
        "list_memories",
        "List stored memories with their ids, newest first: every type, or one category or type.",
        ListMemoriesArgs,
        h.list_memories,
        read_only=True,
    ),
    ToolDef(
        "learn_procedure",
        "Store a learned procedure, policy or pattern, e.g. 'Always run tests before "
        "deploying'. Procedures are part of your instructions in future conversations.",
        LearnProcedureArgs,
        h.learn_procedure,
    ),
    ToolDef(
        "record_procedure_use",
        "Report that you applied a learned procedure (by its [id:…]) and how it went: "
        "success true or false, and how long it took. It keeps the procedure's track "
        "record (times used, success rate, average duration).",
        RecordProcedureUseArgs,
        h.record_procedure_use,
    ),
    ToolDef(
        "record_episode",
        "Record what happened during a task: what you did, decisions made, the outcome and "
        "any error. Episodes are what durable facts are later learned from.",
        RecordEpisodeArgs,
        h.record_episode,
    ),
    ToolDef(
        "get_entity_info",
        "Everything known about a person, project, organisation, place or tool: aliases, "
        "summary, the memories that mention it and related entities.",
        EntityInfoArgs,
        h.get_entity_info,
        read_only=True,
    ),
    ToolDef(
        "explain_fact",
        "Explain where a memory comes from: its versions, what it replaced or was replaced "
        "by, the conversations it was learned from and the entities it mentions.",
        MemoryIdArgs,
        h.explain_fact,
        read_only=True,
    ),
    ToolDef(
        "memory_stats",
        "How much is in memory: facts, episodes, procedures, entities, and what is waiting "
        "to be processed.",
        NoArgs,
        h.memory_stats,
        read_only=True,
    ),
    ToolDef(
        "weak_facts",
        "Facts whose confidence has faded below a threshold, weakest first, so you can check "
        "them with the user and confirm, correct or forget them.",
        WeakFactsArgs,
        h.weak_facts,
        read_only=True,
    ),
]
TOOLS: Mapping[str, ToolDef[Any]] = MappingProxyType({t.name: t for t in _DEFS})


def get_tool(name: str) -> ToolDef[Any]:
    """The tool called ``name``; :class:`ValidationError` naming the known ones otherwise."""
    tool = TOOLS.get(name) if isinstance(name, str) else None
    if tool is None:
        raise ValidationError(f"unknown tool {name!r}", hint="use one of: " + ", ".join(TOOLS))
    return tool


def _select(names: Iterable[str] | None) -> list[ToolDef[Any]]:
    if isinstance(names, str):
        names = [names]
    return list(TOOLS.values()) if names is None else [get_tool(n) for n in names]


def openai_tools(
    names: Iterable[str] | None = None, *, strict: bool = False
) -> list[dict[str, Any]]:
    """``[{"type": "function", "function": {"name", "description", "parameters"}}]``.

    ``names`` picks tools (default: all); ``strict=True`` emits strict-mode schemas.
    """
    return [t.openai(strict=strict) for t in _select(names)]


def anthropic_tools(names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """``[{"name", "description", "input_schema"}]`` for the Anthropic Messages API."""
    return [t.anthropic() for t in _select(names)]


def mcp_tools(names: Iterable[str] | None = None) -> list[McpTool]:
    """``(name, description, input_schema)`` triples to register on an MCP server."""
    return [t.mcp() for t in _select(names)]
