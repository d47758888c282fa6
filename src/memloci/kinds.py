"""The kinds of memory, scope and fact (layer: models): plain enums, no pydantic.

Re-exported by :mod:`memloci.models` (and ``memloci.NodeType`` …); they live apart so the
command line can offer them as choices (``memloci memory --help``) without loading the
pydantic records.
"""

from __future__ import annotations

from enum import StrEnum


class NodeType(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    OPINION = "opinion"


FACT_TYPES = (NodeType.SEMANTIC, NodeType.OPINION)  # what facts are: the fact cap, dedupe


class Scope(StrEnum):
    """Visibility, from most to least specific."""

    SESSION = "session"
    USER = "user"
    AGENT = "agent"
    GLOBAL = "global"


class FactType(StrEnum):
    USER_PREFERENCE = "user_preference"
    WORLD_KNOWLEDGE = "world_knowledge"
    SELF_KNOWLEDGE = "self_knowledge"
    CORRECTION = "correction"
    RELATIONSHIP = "relationship"


__all__ = ["FactType", "NodeType", "Scope"]
