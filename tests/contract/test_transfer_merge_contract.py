"""Import into a namespace that knows some of the backup's entities, on every backend:
an incoming entity whose canonical name or an alias is one of a single existing entity's
names (case and punctuation aside), of a type that fits, is merged into it — the
existing entity keeps its id and summary and gains the aliases, the mention count and
the links — so one person stays one entity. Nothing else is matched: not by meaning,
not against several entities, not across namespaces."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from memloci.models import Entity, EntityType, MemoryNode, NodeType, Scope, short_id
from memloci.service.transfer import ImportReport, export_lines, import_lines
from memloci.storage.base import NodeFilter, Store

from .conftest import EMBED_DIM, EMBED_MODEL

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = datetime(2024, 6, 1, tzinfo=UTC)


def _entity(
    store: Store, ns: str, name: str, *, type: EntityType = EntityType.PERSON,
    aliases: tuple[str, ...] = (), summary: str | None = None, mentions: int = 1,
    seen: datetime = T0, memory: str | None = None, vector: float | None = None,
) -> Entity:  # fmt: skip
    """An entity of ``ns``, linked to a new memory ``memory`` and given a name vector
    filled with ``vector``, when given."""
    entity = store.entities.insert_entity(
        Entity(
            id=short_id(), namespace=ns, canonical_name=name, type=type, aliases=list(aliases),
            summary=summary, first_seen=seen, last_seen=seen, mention_count=mentions,
        )
    )  # fmt: skip
    if memory is not None:
        node = store.memories.insert_node(
            MemoryNode(
                id=short_id(), namespace=ns, type=NodeType.SEMANTIC, content=memory,
                scope=Scope.GLOBAL, event_time=T0, created_at=T0, updated_at=T0, valid_from=T0,
            )
        )  # fmt: skip
        store.entities.link_entities(ns, node.id, [entity.id])
    if vector is not None:
        blob = np.full(EMBED_DIM, vector, np.float32).tobytes()
        store.jobs.save_entity_vector(ns, entity.id, EMBED_MODEL, blob)
    return entity


def _import(store: Store, source: str, target: str) -> ImportReport:
    lines = list(export_lines(store, source))
    return import_lines(store, lines, target, embedding_model=EMBED_MODEL, dimension=EMBED_DIM)


def _memories(store: Store, ns: str, entity: Entity) -> set[str]:
    flt = NodeFilter(namespaces=(ns,), include_invalid=True)
    return {n.content for n in store.entities.entity_nodes(flt, entity.id, limit=100)}


def _names(store: Store, ns: str) -> list[str]:
    return sorted(e.canonical_name for e in store.entities.list_entities(ns, limit=100))


def _state(store: Store, ns: str) -> list[Any]:
    return sorted(
        (e.model_dump_json(), sorted(_memories(store, ns, e)))
        for e in store.entities.list_entities(ns, limit=100)
    )


def test_an_entity_of_the_same_canonical_name_is_merged(store: Store) -> None:
    """The backup's "ana silva" is the namespace's "Ana Silva": one entity, its id and
    summary, both memories; the backup's aliases and mentions added, its name vector
    dropped (the namespace's own is kept); the backup's namespace is untouched; a second
    import adds nothing."""
    ana = _entity(store, "live", "Ana Silva", aliases=("Ana",), summary="our Ana",
                  mentions=2, memory="Ana Silva lives in Porto", vector=1.0)  # fmt: skip
    theirs = _entity(store, "backup", "ana silva", aliases=("Ana", "A. Silva", "ANA SILVA."),
                     summary="their Ana", mentions=3, seen=T1,
                     memory="Ana Silva plays the cello", vector=2.0)  # fmt: skip
    backup = _state(store, "backup")
    report = _import(store, "backup", "live")
    assert (report.entities, report.entities_merged, report.links) == (0, 1, 1)
    (merged,) = store.entities.list_entities("live", limit=100)
    assert merged.id == ana.id
    assert (merged.canonical_name, merged.summary) == ("Ana Silva", "our Ana")
    assert merged.aliases == ["Ana", "A. Silva"]
    assert merged.mention_count == 5
    assert (merged.first_seen, merged.last_seen) == (T0, T1)
    assert _memories(store, "live", merged) == {
        "Ana Silva lives in Porto", "Ana Silva plays the cello",
    }  # fmt: skip
    kept = store.jobs.entity_vectors("live", EMBED_MODEL)
    assert kept == {ana.id: np.full(EMBED_DIM, 1.0, np.float32).tobytes()}
    assert _state(store, "backup") == backup  # the source namespace is not touched
    assert store.entities.get_entity("backup", theirs.id) == theirs
    again = _import(store, "backup", "live")
    assert (again.entities, again.entities_merged, again.links) == (0, 0, 0)
    assert store.entities.list_entities("live", limit=100) == [merged]


def test_an_entity_named_by_an_alias_is_merged(store: Store) -> None:
    """The backup's "Ana" is the alias of the namespace's "Ana Silva"; the backup's
    "Ana Maria Silva" has the alias "ana silva.", the canonical name of "Ana Silva" of
    another namespace. A concept takes the more specific type it meets."""
    ana = _entity(store, "live", "Ana Silva", aliases=("Ana",), memory="Ana lives in Porto")
    _entity(store, "backup", "Ana", memory="Ana likes tea", mentions=4)
    report = _import(store, "backup", "live")
    assert (report.entities, report.entities_merged) == (0, 1)
    (merged,) = store.entities.list_entities("live", limit=100)
    assert (merged.id, merged.aliases, merged.mention_count) == (ana.id, ["Ana"], 5)
    assert _memories(store, "live", merged) == {"Ana lives in Porto", "Ana likes tea"}

    silva = _entity(store, "mine", "Ana Silva", type=EntityType.CONCEPT, memory="Ana sings")
    _entity(store, "theirs", "Ana Maria Silva", aliases=("ana silva.",), memory="Ana paints")
    report = _import(store, "theirs", "mine")
    assert (report.entities, report.entities_merged, report.links) == (0, 1, 1)
    (merged,) = store.entities.list_entities("mine", limit=100)
    assert (merged.id, merged.canonical_name, merged.type) == (
        silva.id, "Ana Silva", EntityType.PERSON
    )  # fmt: skip
    assert merged.aliases == ["Ana Maria Silva"]
    assert _memories(store, "mine", merged) == {"Ana sings", "Ana paints"}


def test_an_entity_of_a_conflicting_type_is_not_merged(store: Store) -> None:
    place = _entity(store, "live", "Mercury", type=EntityType.PLACE, memory="Mercury is hot")
    _entity(store, "backup", "mercury", type=EntityType.TOOL, memory="Mercury builds the app")
    report = _import(store, "backup", "live")
    assert (report.entities, report.entities_merged) == (1, 0)
    assert _names(store, "live") == ["Mercury", "mercury"]
    assert store.entities.get_entity("live", place.id) == place
    assert _memories(store, "live", place) == {"Mercury is hot"}


def test_a_name_several_entities_hold_is_not_merged(store: Store) -> None:
    """Two people of the namespace have the alias "Ana": the backup's "Ana" could be
    either, so it stays an entity of its own and neither of them changes."""
    costa = _entity(store, "live", "Ana Costa", aliases=("Ana",), memory="Ana Costa codes")
    silva = _entity(store, "live", "Ana Silva", aliases=("ana",), memory="Ana Silva sings")
    _entity(store, "backup", "Ana", memory="Ana likes tea")
    report = _import(store, "backup", "live")
    assert (report.entities, report.entities_merged) == (1, 0)
    assert _names(store, "live") == ["Ana", "Ana Costa", "Ana Silva"]
    assert store.entities.get_entity("live", costa.id) == costa
    assert store.entities.get_entity("live", silva.id) == silva
    (new,) = [
        e for e in store.entities.list_entities("live", limit=100) if e.canonical_name == "Ana"
    ]
    assert _memories(store, "live", new) == {"Ana likes tea"}


def test_another_namespaces_entity_of_the_same_name_is_not_merged(store: Store) -> None:
    other = _entity(store, "other", "Ana Silva", memory="Ana Silva of other", vector=1.0)
    _entity(store, "live", "Bob", memory="Bob cooks")
    _entity(store, "backup", "Ana Silva", memory="Ana Silva of backup", vector=2.0)
    before = _state(store, "other")
    report = _import(store, "backup", "live")
    assert (report.entities, report.entities_merged) == (1, 0)
    assert _names(store, "live") == ["Ana Silva", "Bob"]
    assert _state(store, "other") == before
    assert store.jobs.entity_vectors("other", EMBED_MODEL) == {
        other.id: np.full(EMBED_DIM, 1.0, np.float32).tobytes()
    }


def test_a_merged_entity_without_a_vector_takes_the_imported_one(store: Store) -> None:
    ana = _entity(store, "live", "Ana", memory="Ana lives in Porto")
    _entity(store, "backup", "Ana", memory="Ana likes tea", vector=2.0)
    assert _import(store, "backup", "live").entities_merged == 1
    assert store.jobs.entity_vectors("live", EMBED_MODEL) == {
        ana.id: np.full(EMBED_DIM, 2.0, np.float32).tobytes()
    }


class _Failing:
    """A store whose memory ↔ entity links fail: the import's transaction rolls back."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.entities = _FailingLinks(store.entities)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class _FailingLinks:
    """The store's entities, whose links fail."""

    def __init__(self, entities: Any) -> None:
        self._entities = entities

    def __getattr__(self, name: str) -> Any:
        return getattr(self._entities, name)

    def link_entities(self, *args: Any, **kwargs: Any) -> int:
        raise RuntimeError("the disk is full")


def test_a_failing_import_leaves_the_merged_entity_as_it_was(store: Store) -> None:
    _entity(store, "live", "Ana Silva", aliases=("Ana",), memory="Ana lives in Porto")
    _entity(store, "backup", "Ana Silva", aliases=("A. Silva",), memory="Ana likes tea",
            mentions=3)  # fmt: skip
    before = _state(store, "live")
    lines = list(export_lines(store, "backup"))
    failing: Any = _Failing(store)
    with pytest.raises(RuntimeError, match="disk is full"):
        import_lines(failing, lines, "live", embedding_model=EMBED_MODEL, dimension=EMBED_DIM)
    assert _state(store, "live") == before
    assert len(list(store.memories.iter_nodes("live"))) == 1
