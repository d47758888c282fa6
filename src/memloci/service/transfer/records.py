"""A namespace's records beside its memories, in an export (layer: service helpers):
entities with their name vectors, memory ↔ entity links, conversation threads,
consolidation sessions, and knowledge sources with their chunks and chunk vectors.

:mod:`memloci.service.transfer` writes their lines after the memories' (:func:`record_lines`,
:func:`link_lines`) and, importing, checks them against the store (:func:`check_store`)
and writes them (:func:`write_records`) in its one transaction. Entity ids are unique
across a store, so an entity whose id another namespace holds is copied under an id
derived from it (:func:`~memloci.service.transfer.copies.entity_copies`), as memories are, and one
named as exactly one entity the namespace holds is merged into it
(:mod:`memloci.service.transfer.entities`); threads, sessions and knowledge sources are the
namespace's own (their ids are per namespace). What the namespace holds already is left
as it is, so importing twice adds nothing.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Container, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from memloci.models import Entity, KnowledgeChunk, KnowledgeSource, MemoryUser, Thread
from memloci.service.transfer.checks import Link, SessionRecord
from memloci.service.transfer.copies import entity_copies
from memloci.service.transfer.entities import (
    ImportModel,
    existing,
    fits,
    merge_into,
    save_name_vector,
)
from memloci.service.transfer.parse import Line, check_channels, conflict, invalid, root
from memloci.storage.base import Store

if TYPE_CHECKING:
    from memloci.service.transfer.report import ImportReport


def _b64(blob: bytes | None) -> str | None:
    return base64.b64encode(blob).decode() if blob else None


# ---------------------------------------------------------------------- export
T = TypeVar("T")


def every(page: Callable[[int], list[T]], start: int = 1000) -> list[T]:
    """All of a listing in one query (one consistent read): ``page(limit)`` again with a
    larger limit until it returns fewer than asked."""
    limit = start
    while len(found := page(limit)) >= limit:
        limit *= 8
    return found


def link_lines(
    store: Store, namespace: str, ids: Sequence[str], entity_ids: Container[str]
) -> Iterator[str]:
    """The links of memories ``ids`` to the entities they mention that are in
    ``entity_ids`` (those the export holds)."""
    for node_id, entities in store.entities.node_entities(namespace, ids).items():
        for entity in entities:
            if entity.id in entity_ids:
                yield json.dumps({"kind": "link", "node_id": node_id, "entity_id": entity.id})


def record_lines(
    store: Store, namespace: str, *, vectors: bool, entities: Sequence[Entity]
) -> Iterator[str]:
    """The namespace's ``entities`` (with their name vectors of the store's model),
    threads, consolidation sessions and knowledge sources (each followed by its chunks)."""
    model = store.get_meta("embedding_model")
    names = store.jobs.entity_vectors(namespace, model) if vectors and model else {}
    for entity in entities:
        data = entity.model_dump(mode="json")
        yield json.dumps({"kind": "entity", **data, "vector": _b64(names.get(entity.id))})
    for listed in every(lambda n: store.people.list_threads(namespace, limit=n)):
        thread = store.people.get_thread(namespace, listed.id)
        if thread is not None:
            yield json.dumps({"kind": "thread", **thread.model_dump(mode="json")})
    for state in store.sessions(namespace):
        session = SessionRecord(
            session=state.session,
            user=state.user,
            agent=state.agent,
            first_seen_at=state.first_seen_at,
            consolidated_at=state.consolidated_at,
        )
        yield json.dumps({"kind": "session", **session.model_dump(mode="json")})
    for source in store.knowledge.knowledge_sources(namespace):
        yield json.dumps({"kind": "knowledge", **source.model_dump(mode="json")})
        blobs = store.knowledge_vectors(namespace, source.id) if vectors else {}
        for chunk in store.knowledge.knowledge_chunks(namespace, source.id):
            data = chunk.model_dump(mode="json")
            yield json.dumps({"kind": "chunk", **data, "vector": _b64(blobs.get(chunk.id))})


# ---------------------------------------------------------------------- import
def check_store(
    store: Store, namespace: str, records: list[Line], nodes: set[str], entities: set[str]
) -> None:
    """What the import may only hold given the namespace: a link's memory and entity in
    the import (``nodes``, ``entities``) or the namespace; a new user's channel ids not
    another user's of the namespace (as ``save_user`` refuses them)."""
    links = [line for line in records if isinstance(line.record, Link)]
    outside = sorted({line.record.node_id for line in links} - nodes)
    known = {n.id for n in store.memories.get_nodes(namespace, outside)} if outside else set()
    for line in links:
        link: Link = line.record
        if link.node_id not in nodes and link.node_id not in known:
            problem = f"memory {link.node_id!r} is neither in the import nor in namespace"
            raise invalid(line.where, f"{problem} {namespace!r}", line.what)
        if (
            link.entity_id not in entities
            and store.entities.get_entity(namespace, link.entity_id) is None
        ):
            problem = f"entity {link.entity_id!r} is neither in the import nor in namespace"
            raise invalid(line.where, f"{problem} {namespace!r}", line.what)
    users = [line for line in records if isinstance(line.record, MemoryUser)]
    by_id: dict[str, MemoryUser] = {line.record.id: line.record for line in users}
    held = {i for i in by_id if store.people.get_user(namespace, i) is not None}  # left as they are

    def lookup(user_id: str) -> MemoryUser | None:
        if user_id in by_id and user_id not in held:
            return by_id[user_id]
        return store.people.get_user(namespace, user_id)

    new = [line for line in users if line.record.id not in held]
    check_channels(new, lookup)
    for line in new:
        user: MemoryUser = line.record
        for channel, ref in user.identifiers.items():
            holder = store.people.find_user(namespace, channel, ref)
            if holder is None or holder.id == user.id:
                continue
            if root(holder.id, lookup) != root(user.id, lookup):
                raise conflict(line, channel, ref, holder.id, f" of namespace {namespace!r}")


def write_records(
    store: Store,
    namespace: str,
    records: list[Line],
    renamed: dict[str, str],
    report: ImportReport,
    model: ImportModel,
) -> None:
    """Write the entities (with their name vectors when they are of the store's
    ``model``; those whose name vector is of another model are listed in
    ``report.names_to_embed``), links (their memories renamed as ``renamed`` says),
    threads, sessions and knowledge sources the namespace lacks; knowledge vectors are
    kept when their model is ``model``."""
    of = _by_kind(records)
    entities = _write_entities(store, namespace, of[Entity], report)
    merge_into(store, namespace, entities.merged, of[Entity], of[Link], renamed, report, model)
    for line in of[Entity]:
        if line.record.id not in entities.fresh or (line.vector is None and not line.note):
            continue
        stored = entities.ids[line.record.id]
        if not save_name_vector(store, namespace, stored, line.vector, model):
            # a name vector of another model (or not finite): embedded after the import
            report.names_to_embed.append(stored)
    targets: dict[str, list[str]] = {}
    for line in of[Link]:
        link: Link = line.record
        node = renamed.get(link.node_id, link.node_id)
        targets.setdefault(node, []).append(entities.ids.get(link.entity_id, link.entity_id))
    for node, ids in targets.items():
        report.links += store.entities.link_entities(namespace, node, ids)
    for line in of[Thread]:
        if store.people.get_thread(namespace, line.record.id) is None:
            store.people.upsert_thread(line.record)
            report.threads += 1
    have = {s.session for s in store.sessions(namespace)}
    for line in of[SessionRecord]:
        s: SessionRecord = line.record
        if s.session in have:
            continue
        store.jobs.register_session(
            namespace, s.session, user=s.user, agent=s.agent, now=s.first_seen_at
        )
        if s.consolidated_at is not None:
            store.jobs.finish_session(
                namespace, s.session, user=s.user, agent=s.agent, now=s.consolidated_at
            )
        report.sessions += 1
    _write_knowledge(store, namespace, of, report, model)


def _by_kind(records: list[Line]) -> dict[type, list[Line]]:
    out: dict[type, list[Line]] = {
        kind: [] for kind in (Entity, Link, Thread, SessionRecord, KnowledgeSource, KnowledgeChunk)
    }
    for line in records:
        if type(line.record) in out:
            out[type(line.record)].append(line)
    return out


class _Entities:
    """The import's entities: the id each is stored under, those written now, and those
    merged into an entity the namespace held (:mod:`memloci.service.transfer.entities`)."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.fresh: set[str] = set()
        self.merged: dict[str, Entity] = {}


def _write_entities(
    store: Store, namespace: str, lines: list[Line], report: ImportReport
) -> _Entities:
    out = _Entities()
    ids = [line.record.id for line in lines]
    renamed, present = entity_copies(store, namespace, ids, taken=set(ids).intersection)
    out.ids.update(renamed)
    # the namespace's entities before the import writes any: the import's own are not
    # merged with each other (into an empty namespace a backup comes back as it was)
    held = existing(store, namespace) if lines else None
    for line in lines:
        entity: Entity = line.record
        if entity.id in present:
            continue
        if held is not None and (target := held.match(entity)) is not None:
            out.ids[entity.id] = target.id
            out.merged[entity.id] = target
            continue
        stored = store.entities.insert_entity(
            entity.model_copy(update={"id": renamed.get(entity.id, entity.id)})
        )
        out.ids[entity.id] = stored.id
        out.fresh.add(entity.id)
    report.entities += len(out.fresh)
    return out


def _write_knowledge(
    store: Store,
    namespace: str,
    of: dict[type, list[Line]],
    report: ImportReport,
    model: ImportModel,
) -> None:
    """Each knowledge source the namespace lacks, with its chunks: their vectors when
    they come from the store's ``model`` (all of them, finite, of its dimension), else none (the
    chunks are embedded after the import, :attr:`ImportReport.chunks_to_embed`)."""
    chunks: dict[str, list[Line]] = {}
    for line in of[KnowledgeChunk]:
        chunks.setdefault(line.record.source_id, []).append(line)
    for line in of[KnowledgeSource]:
        source: KnowledgeSource = line.record
        if store.knowledge.knowledge_source(namespace, source.id) is not None:
            continue
        mine = sorted(chunks.get(source.id, []), key=lambda c: c.record.ordinal)
        dimension = model.dimension
        reuse = (
            model.name is not None
            and dimension is not None
            and source.embedding_model == model.name
            and all(fits(c.vector, dimension) for c in mine)
        )
        kept = model.name if reuse else None
        rows: list[KnowledgeChunk] = [
            c.record.model_copy(update={"collection": source.collection, "embedding_model": kept})
            for c in mine
        ]
        matrix = None
        if reuse and mine:
            matrix = np.stack([np.asarray(c.vector, np.float32) for c in mine])
        store.knowledge.replace_knowledge(
            source.model_copy(update={"embedding_model": kept}), rows, matrix
        )
        report.knowledge_sources += 1
        report.knowledge_chunks += len(rows)
        if not reuse:
            report.chunks_to_embed += len(rows)
