"""Imported entities merged into the namespace's own by name (layer: service helpers).

An import (:mod:`memloci.service.transfer`) into a namespace that already knows a person must not
make a second entity of them. An incoming entity is merged into an entity the target
namespace held before the import when its canonical name (else one of its aliases) is a
name of exactly one of them (its canonical name or an alias), compared by
:func:`~memloci.consolidation.entities.name_key` (case and punctuation aside), and their
types fit (the same, or one is ``concept``, :func:`~memloci.consolidation.entities.types_fit`):
the rule consolidation applies to an exact name. Nothing looser (compatible names, meaning),
nothing of another namespace, and a name several entities hold merges into none of them.

The entity the namespace holds keeps its id, canonical name, summary and attributes; it
gains the incoming names as aliases (not those it has), the incoming mention count
(once: while the import links it to memories it was not linked to, so a second import of
the file adds nothing), the earlier ``first_seen`` and later ``last_seen``, and a
``concept`` the more specific type. The incoming links follow it; the incoming name
vector is kept only when it has none of that model. All of it is written in the import's
one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memloci.consolidation.entities import merge_aliases, name_key, types_fit
from memloci.models import Entity, EntityType
from memloci.service.transfer.checks import Link
from memloci.service.transfer.parse import Line
from memloci.storage.base import Store

if TYPE_CHECKING:
    from memloci.service.transfer.report import ImportReport

__all__ = [
    "ImportModel",
    "NameIndex",
    "existing",
    "fits",
    "merge_into",
    "merged",
    "save_name_vector",
]
PAGE = 1000


@dataclass(frozen=True)
class ImportModel:
    """The embedding model of the store an import writes to (``name``, ``dimension``;
    None without one), and whether the import's vectors are of it (``same``: the file's
    header names that model and dimension)."""

    name: str | None
    dimension: int | None
    same: bool


def fits(vector: Any, dimension: int) -> bool:
    """Whether an imported vector is given and of ``dimension``."""
    return vector is not None and len(vector) == dimension


def save_name_vector(
    store: Store, namespace: str, entity_id: str, vector: Any, model: ImportModel
) -> bool:
    """Save an imported name ``vector`` as the entity's when it is of the store's model
    (the file's vectors are, and it has the model's dimension): True; else False (the
    name is embedded after the import)."""
    if not (model.same and model.name and model.dimension and fits(vector, model.dimension)):
        return False
    blob = np.asarray(vector, np.float32).tobytes()
    store.jobs.save_entity_vector(namespace, entity_id, model.name, blob)
    return True


class NameIndex:
    """A namespace's entities by the :func:`name_key` of each of their names."""

    def __init__(self, entities: Iterable[Entity]) -> None:
        self._by_key: dict[str, dict[str, Entity]] = {}
        for entity in entities:
            for name in (entity.canonical_name, *entity.aliases):
                if key := name_key(name):
                    self._by_key.setdefault(key, {})[entity.id] = entity

    def match(self, incoming: Entity) -> Entity | None:
        """The one entity ``incoming`` is merged into: the one whose names hold its
        canonical name, else one of its aliases, of a type that fits; None when there
        is none or several."""
        for names in ([incoming.canonical_name], incoming.aliases):
            found: dict[str, Entity] = {}
            for key in filter(None, map(name_key, names)):
                for entity in self._by_key.get(key, {}).values():
                    if types_fit(incoming.type, entity):
                        found[entity.id] = entity
            if found:
                return next(iter(found.values())) if len(found) == 1 else None
        return None


def existing(store: Store, namespace: str) -> NameIndex:
    """The index of every entity ``namespace`` holds."""
    entities: list[Entity] = []
    while page := store.entities.list_entities(namespace, limit=PAGE, offset=len(entities)):
        entities += page
        if len(page) < PAGE:
            break
    return NameIndex(entities)


def merged(ours: Entity, theirs: Entity, *, mentions: bool) -> Entity:
    """``ours`` with what ``theirs`` adds: its names as aliases, its mention count when
    ``mentions``, the wider first / last seen, its type when ours is a ``concept``."""
    generic = ours.type is EntityType.CONCEPT
    return ours.model_copy(
        update={
            "aliases": merge_aliases(ours, [theirs.canonical_name, *theirs.aliases]),
            "type": theirs.type if generic else ours.type,
            "mention_count": ours.mention_count + (theirs.mention_count if mentions else 0),
            "first_seen": min(ours.first_seen, theirs.first_seen),
            "last_seen": max(ours.last_seen, theirs.last_seen),
        }
    )


def merge_into(
    store: Store,
    namespace: str,
    targets: dict[str, Entity],
    entities: Sequence[Line],
    links: Sequence[Line],
    renamed: dict[str, str],
    report: ImportReport,
    model: ImportModel,
) -> None:
    """Merge each incoming entity of ``entities`` that ``targets`` maps (incoming id →
    the namespace's entity) into it, before the ``links`` (their memories renamed as
    ``renamed`` says) are written; counts in ``report.entities_merged`` those that
    changed it. An incoming name vector of the store's ``model`` is saved when the entity
    has none (else the entity is listed in ``report.names_to_embed``)."""
    if not targets:
        return
    linked: dict[str, set[str]] = {}  # incoming id -> the memories the import links it to
    for line in links:
        link: Link = line.record
        if link.entity_id in targets:
            node = renamed.get(link.node_id, link.node_id)
            linked.setdefault(link.entity_id, set()).add(node)
    nodes = sorted(set().union(*linked.values()))
    held = store.entities.node_entities(namespace, nodes) if nodes else {}
    before = {node: {e.id for e in found} for node, found in held.items()}
    vectors = set(store.jobs.entity_vectors(namespace, model.name)) if model.name else set()
    done: dict[str, Entity] = {}  # the namespace's entities as merged so far, by id
    for line in entities:
        theirs: Entity = line.record
        if (target := targets.get(theirs.id)) is None:
            continue
        ours = done.get(target.id, target)
        new = any(target.id not in before.get(n, ()) for n in linked.get(theirs.id, ()))
        if (out := merged(ours, theirs, mentions=new)) != ours or new:
            done[target.id] = out
            report.entities_merged += 1
        if target.id in vectors or (line.vector is None and not line.note):
            continue
        if save_name_vector(store, namespace, target.id, line.vector, model):
            vectors.add(target.id)
        elif target.id not in report.names_to_embed:
            report.names_to_embed.append(target.id)
    for entity in done.values():
        store.entities.update_entity(entity)
