"""The extractor interface and its results (layer: consolidation).

An :class:`Extractor` reads conversation episodes and proposes durable memories: facts,
opinions and procedures (:class:`ExtractedFact`) and the entities they mention
(:class:`ExtractedEntity`). It only proposes: storing, linking ``derived_from``,
entity resolution and conflict handling belong to the consolidator. Every name in a
fact's ``entities`` matches an extracted entity's ``name`` (case-insensitively).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memloci.errors import MemlociError
from memloci.models import CONTENT_MAX, CONTENT_MIN, EntityType, FactType, MemoryNode, NodeType
from memloci.models import sanitize_category as _sanitize_category

FactKind = Literal["semantic", "opinion", "procedural"]
_FACT_TYPES = {t.value: t for t in FactType}
_ENTITY_TYPES = {t.value: t for t in EntityType}


def clamp_confidence(value: Any, default: float) -> float:
    """``value`` as a float in [0, 1]; ``default`` when it is not a finite number."""
    if isinstance(value, bool):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return default if not math.isfinite(number) else min(1.0, max(0.0, number))


def _names(values: Any) -> list[str]:
    """Stripped, non-empty, de-duplicated (case-insensitive) strings, in order."""
    if not isinstance(values, list):
        return []
    seen: set[str] = set()
    out = []
    for value in values:
        if not isinstance(value, str):
            continue
        text = " ".join(value.split())[:200]
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    return out


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True, defer_build=True)


class ExtractedFact(_Result):
    """A durable memory proposed by an extractor, with where it came from."""

    content: str = Field(
        min_length=CONTENT_MIN,
        max_length=CONTENT_MAX,
        description="one self-contained sentence in the third person, e.g. "
        "'User prefers Friday due dates' or 'Alec is the user's boss'",
    )
    type: FactKind = Field("semantic", description="semantic fact, opinion or procedure")
    category: str = Field("general", description="person, preference, context, project, …")
    subject: str | None = Field(None, max_length=200, description="who or what it is about")
    key: str | None = Field(
        None, max_length=200, description="stable slot name for single-valued facts"
    )
    fact_type: FactType | None = None
    confidence: float = Field(0.8, description="0–1: how sure and how durable")
    source_ids: list[str] = Field(default_factory=list, description="episode ids it came from")
    entities: list[str] = Field(default_factory=list, description="entity names it mentions")

    @property
    def node_type(self) -> NodeType:
        return NodeType(self.type)

    @field_validator("type", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, value: Any) -> str:
        try:
            return _sanitize_category(value if isinstance(value, str) else None)
        except MemlociError as exc:
            raise ValueError(exc.message) from None

    @field_validator("subject", "key", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("fact_type", mode="before")
    @classmethod
    def _fact_type(cls, value: Any) -> FactType | None:
        text = str(value).strip().lower() if value is not None else ""
        return _FACT_TYPES.get(text)

    @field_validator("confidence", mode="before")
    @classmethod
    def _clamp(cls, value: Any) -> float:
        return clamp_confidence(value, 0.8)

    @field_validator("source_ids", "entities", mode="before")
    @classmethod
    def _unique(cls, value: Any) -> list[str]:
        return _names(value)


class ExtractedEntity(_Result):
    """A named person, organisation, place, project, tool or concept."""

    name: str = Field(min_length=1, max_length=200)
    type: EntityType = EntityType.CONCEPT
    aliases: list[str] = Field(default_factory=list, description="other names used for it")

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> EntityType:
        text = str(value).strip().lower() if value is not None else ""
        return _ENTITY_TYPES.get(text, EntityType.CONCEPT)

    @field_validator("aliases", mode="before")
    @classmethod
    def _aliases(cls, value: Any) -> list[str]:
        return _names(value)

    @model_validator(mode="after")
    def _not_own_alias(self) -> ExtractedEntity:
        self.aliases = [a for a in self.aliases if a.casefold() != self.name.casefold()]
        return self


class Extraction(_Result):
    """What an extractor proposes for a batch of episodes."""

    facts: list[ExtractedFact] = Field(default_factory=list)
    entities: list[ExtractedEntity] = Field(default_factory=list)


@runtime_checkable
class Extractor(Protocol):
    """Proposes durable memories from episodes. Synchronous and side-effect free;
    ``known`` are memories already stored (for context and to avoid repeats)."""

    name: str

    def extract(
        self, episodes: Sequence[MemoryNode], *, known: Sequence[MemoryNode] = ()
    ) -> Extraction: ...


def merge_entities(entities: Sequence[ExtractedEntity]) -> list[ExtractedEntity]:
    """One entry per name (case-insensitive), aliases merged; a specific type beats
    ``concept``. An entity named like another's alias is folded into it."""
    merged: dict[str, ExtractedEntity] = {}
    index: dict[str, str] = {}  # casefolded name or alias -> key in ``merged``
    for entity in entities:
        names = [entity.name, *entity.aliases]
        key = next((index[n.casefold()] for n in names if n.casefold() in index), None)
        if key is None:
            key = entity.name.casefold()
            merged[key] = entity.model_copy(deep=True)
        else:
            into = merged[key]
            extra = [n for n in names if n.casefold() != into.name.casefold()]
            into.aliases = _names([*into.aliases, *extra])
            if into.type is EntityType.CONCEPT:
                into.type = entity.type
        for name in [merged[key].name, *merged[key].aliases]:
            index.setdefault(name.casefold(), key)
    return list(merged.values())


def canonical_names(entities: Sequence[ExtractedEntity]) -> dict[str, str]:
    """Casefolded name or alias → the entity's name."""
    out: dict[str, str] = {}
    for entity in entities:
        for name in (entity.name, *entity.aliases):
            out.setdefault(name.casefold(), entity.name)
    return out


def finalize(facts: Sequence[ExtractedFact], entities: Sequence[ExtractedEntity]) -> Extraction:
    """An :class:`Extraction` with entities merged, each fact's entity names pointed
    at them (unknown names dropped), duplicate facts folded (sources merged) and
    entities no fact mentions left out."""
    merged = merge_entities(entities)
    names = canonical_names(merged)
    out: dict[str, ExtractedFact] = {}
    for fact in facts:
        mentioned = [names[e.casefold()] for e in fact.entities if e.casefold() in names]
        fact = fact.model_copy(update={"entities": list(dict.fromkeys(mentioned))})
        key = " ".join(fact.content.casefold().split()).rstrip(".!")
        if key in out:
            first = out[key]
            fact = first.model_copy(
                update={
                    "source_ids": list(dict.fromkeys([*first.source_ids, *fact.source_ids])),
                    "entities": list(dict.fromkeys([*first.entities, *fact.entities])),
                    "confidence": max(first.confidence, fact.confidence),
                }
            )
        out[key] = fact
    used = {name for fact in out.values() for name in fact.entities}
    return Extraction(facts=list(out.values()), entities=[e for e in merged if e.name in used])


__all__ = [
    "ExtractedEntity",
    "ExtractedFact",
    "Extraction",
    "Extractor",
    "FactKind",
    "canonical_names",
    "clamp_confidence",
    "finalize",
    "merge_entities",
]
