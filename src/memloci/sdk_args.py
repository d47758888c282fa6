"""The SDK's keyword arguments (layer: sdk): the options a turn and a search take, and
the check that names the public method when a keyword is unknown."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from memloci.kinds import FactType, NodeType, Scope
from memloci.models import EpisodeDetails, ProcedureType, SourceType

if TYPE_CHECKING:
    from memloci.service.knowledge import KnowledgeProgress


def known(name: str, given: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """A public method's unknown keyword is a TypeError naming that method (as Python's
    own message for a method with an explicit signature), not an internal one."""
    wrong = [k for k in given if k not in allowed]
    if wrong:
        raise TypeError(
            f"{name}() got an unexpected keyword argument {wrong[0]!r} "
            f"(it takes {', '.join(sorted(allowed))})"
        )


class TurnOptions(TypedDict, total=False):
    """Where a conversation turn belongs and who said it (all optional)."""

    user: str | None
    session: str | None
    speaker: str | None
    role: str | None
    agent: str | None
    event_time: datetime | None
    metadata: Mapping[str, Any] | None
    namespace: str | None


class ContextFilters(TypedDict, total=False):
    """Who is asking: the memories they may see."""

    user: str | None
    agent: str | None
    session: str | None
    namespace: str | Sequence[str] | None


class SearchFilters(ContextFilters, total=False):
    """Search filters (all optional)."""

    type: Any
    category: Any
    scope: Any
    after: str | datetime | None
    before: str | datetime | None
    min_confidence: float | None
    as_of: str | datetime | None


class RememberOptions(TypedDict, total=False):
    """What ``remember`` takes beside the text (all optional)."""

    namespace: str | None
    key: str | None
    value: Any
    category: str | None
    subject: str | None
    fact_type: FactType | str | None
    type: NodeType | str
    scope: Scope | str | None
    confidence: float
    user: str | None
    agent: str | None
    session: str | None
    event_time: datetime | None
    metadata: Mapping[str, Any] | None
    overwrite: bool
    suggest_on_subject: bool
    source_type: SourceType | str


class UpdateOptions(TypedDict, total=False):
    """What ``update`` may change beside the text (all optional)."""

    namespace: str | None
    value: Any
    set_value: bool
    category: str | None
    subject: str | None
    metadata: Mapping[str, Any] | None
    session: str | None
    confirmed: bool


class CorrectOptions(TypedDict, total=False):
    """What ``correct`` takes beside the new text."""

    namespace: str | None
    value: Any


class LookupOptions(TypedDict, total=False):
    """Who looks a key up (the scopes walked: session, user, agent, global)."""

    namespace: str | None
    user: str | None
    agent: str | None
    session: str | None


class ProcedureOptions(TypedDict, total=False):
    """What ``learn_procedure`` takes beside the text (all optional)."""

    namespace: str | None
    triggers: Mapping[str, Any] | None
    procedure_type: ProcedureType | str
    category: str | None
    user: str | None
    agent: str | None
    scope: Scope | str | None
    metadata: Mapping[str, Any] | None


class EpisodeOptions(TypedDict, total=False):
    """What ``record_episode`` takes beside the text (all optional)."""

    namespace: str | None
    user: str | None
    agent: str | None
    session: str | None
    details: EpisodeDetails | Mapping[str, Any] | None
    event_time: datetime | None
    metadata: Mapping[str, Any] | None
    category: str | None


class ProcedureUseOptions(TypedDict, total=False):
    """One use of a procedure: how it went, when known."""

    namespace: str | None
    success: bool | None
    duration_ms: float | None


class KnowledgeAddOptions(TypedDict, total=False):
    """Where ``add_knowledge`` files what it reads (all optional; the service's defaults:
    the default namespace, collection ``default``, ``*.md``, ``*.txt`` and ``*.rst``)."""

    namespace: str | None
    collection: str
    glob: str | Sequence[str] | None
    progress: KnowledgeProgress | None


class KnowledgeSearchOptions(TypedDict, total=False):
    """Where ``search_knowledge`` looks and how much it returns (all optional; the
    service's defaults: every collection, ``limit=5``, ``threshold=0.3``)."""

    namespace: str | Sequence[str] | None
    collections: Sequence[str] | None
    limit: int
    threshold: float


def _keys(options: Any) -> frozenset[str]:
    return frozenset(options.__required_keys__ | options.__optional_keys__)


TURN, SEARCH, CONTEXT = _keys(TurnOptions), _keys(SearchFilters), _keys(ContextFilters)
# the keywords of each SDK method that passes its options on to the service
OPTIONS: dict[str, frozenset[str]] = {
    "remember": _keys(RememberOptions),
    "update": _keys(UpdateOptions),
    "correct": _keys(CorrectOptions),
    "lookup": _keys(LookupOptions),
    "learn_procedure": _keys(ProcedureOptions),
    "record_episode": _keys(EpisodeOptions),
    "record_procedure_use": _keys(ProcedureUseOptions),
    "add_knowledge": _keys(KnowledgeAddOptions),
    "search_knowledge": _keys(KnowledgeSearchOptions),
}


__all__ = [
    "CONTEXT",
    "OPTIONS",
    "SEARCH",
    "TURN",
    "ContextFilters",
    "CorrectOptions",
    "EpisodeOptions",
    "KnowledgeAddOptions",
    "KnowledgeSearchOptions",
    "LookupOptions",
    "ProcedureOptions",
    "ProcedureUseOptions",
    "RememberOptions",
    "SearchFilters",
    "TurnOptions",
    "UpdateOptions",
    "known",
]
