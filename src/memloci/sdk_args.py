"""The SDK's keyword arguments (layer: sdk): the options a turn and a search take, and
the check that names the public method when a keyword is unknown."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict


@functools.cache
def keywords(method: Callable[..., Any]) -> frozenset[str]:
    """The keyword arguments a service method takes (its ``**kwargs`` callers pass on);
    a private one (``_name``, internal to the service) is not the SDK's."""
    params = inspect.signature(method).parameters.values()
    kinds = (p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)
    return frozenset(p.name for p in kinds if not p.name.startswith("_"))


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


def _keys(options: Any) -> frozenset[str]:
    return frozenset(options.__required_keys__ | options.__optional_keys__)


TURN, SEARCH, CONTEXT = _keys(TurnOptions), _keys(SearchFilters), _keys(ContextFilters)


__all__ = [
    "CONTEXT",
    "SEARCH",
    "TURN",
    "ContextFilters",
    "SearchFilters",
    "TurnOptions",
    "keywords",
    "known",
]
