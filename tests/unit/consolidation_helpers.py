"""Helpers shared by the consolidation and maintenance tests: a scripted extractor and a
slow one (importable by child processes), turns and store counts."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memloci import Memory
from memloci.consolidation.base import ExtractedEntity, ExtractedFact, Extraction, finalize
from memloci.consolidation.rules import RuleExtractor
from memloci.models import EntityType, MemoryNode


def fact(content: str, **fields: Any) -> ExtractedFact:
    return ExtractedFact(content=content, **fields)


def turns(m: Memory, session: str, *texts: str, user: str = "sam") -> list[MemoryNode]:
    """Add user turns to a session; returns the episodes."""
    return [m.add(t, user=user, session=session, role="user") for t in texts]  # type: ignore[misc]


def counts(m: Memory) -> tuple[Any, ...]:
    """Everything consolidation could change, to compare before and after."""
    s = m.stats()
    flags = [n.consolidated_at is None for n in m.list(type="episodic", limit=500)]
    return s.nodes_by_type, s.current_by_type, s.edges_by_type, s.entities, flags


class Scripted:
    """Returns the facts scripted for the episodes' session (sources: every episode;
    entities: the facts' ``entities`` names, of ``entity_type``)."""

    name = "scripted"

    def __init__(
        self, script: Mapping[str, Sequence[ExtractedFact]], *, entity_type: str = "concept",
        extra_entities: Sequence[ExtractedEntity] = (),
    ) -> None:  # fmt: skip
        self.script, self.extra = script, list(extra_entities)
        self.entity_type = EntityType(entity_type)
        self.calls = 0

    def extract(
        self, episodes: Sequence[MemoryNode], *, known: Sequence[MemoryNode] = ()
    ) -> Extraction:
        self.calls += 1
        ids = [e.id for e in episodes]
        facts = [
            f.model_copy(update={"source_ids": f.source_ids or ids})
            for f in self.script.get(episodes[0].session or "", [])
        ]
        names = [n for f in facts for n in f.entities]
        entities = [ExtractedEntity(name=n, type=self.entity_type) for n in names]
        out = finalize(facts, entities)
        out.entities += self.extra
        return out


class SlowRules:
    """The rule extractor, but each call waits: ``started`` is set once it is inside,
    and it returns after ``release`` is set (or ``delay`` seconds)."""

    name = "slow-rules"

    def __init__(self, delay: float = 2.0, release: threading.Event | None = None) -> None:
        self.delay, self.release = delay, release
        self.started = threading.Event()

    def extract(
        self, episodes: Sequence[MemoryNode], *, known: Sequence[MemoryNode] = ()
    ) -> Extraction:
        self.started.set()
        if self.release is not None:
            self.release.wait(self.delay)
        else:
            time.sleep(self.delay)
        return RuleExtractor().extract(episodes, known=known)
