"""What an import wrote (layer: service): :class:`ImportReport`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ImportReport:
    """What an import wrote (and skipped: memories the namespace held already)."""

    nodes: int = 0
    skipped: int = 0
    versions: int = 0
    edges: int = 0
    users: int = 0
    vectors_reused: int = 0
    needs_embedding: int = 0
    entities: int = 0
    entities_merged: int = 0  # merged by name into one the namespace held
    links: int = 0
    threads: int = 0
    sessions: int = 0
    knowledge_sources: int = 0
    knowledge_chunks: int = 0
    chunks_to_embed: int = 0  # knowledge chunks stored without a vector (another model)
    errors: list[str] = field(default_factory=list)
    # entities whose name vector came from another model: embedded after the import
    names_to_embed: list[str] = field(default_factory=list)
