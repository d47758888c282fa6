"""The write API's checks applied to an import's records (layer: service helpers).

Each record of a :mod:`memloci.service.transfer` import is checked as the write commands check
their input (:mod:`memloci.validate`) and returned cleaned as a write stores it. Also the
two record kinds of an export that are no model of their own: :class:`Link` (a memory
mentions an entity) and :class:`SessionRecord` (a session as consolidation records it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from memloci import validate as v
from memloci.errors import ValidationError
from memloci.models import (
    TURN_MAX,
    Edge,
    Entity,
    KnowledgeChunk,
    KnowledgeSource,
    MemoryNode,
    MemoryUser,
    MemoryVersion,
    NodeType,
    Thread,
    check_id,
)
from memloci.service.documents import MAX_FILE_BYTES, check_collection


def _times(record: BaseModel) -> dict[str, datetime | None]:
    """Every time of ``record`` (its model's datetime fields, in their order), checked as
    the write API checks a time (in range, in UTC); a time field added is checked too."""
    return {
        name: v.when(getattr(record, name), name)
        for name, field in type(record).model_fields.items()
        if field.annotation in (datetime, datetime | None)
    }


def checked_node(node: MemoryNode) -> MemoryNode:
    """The checks the write API makes (:mod:`memloci.validate`), applied to an imported
    memory; returns it cleaned as a write stores it (text trimmed, category normalised,
    times in UTC)."""
    check_id(node.id)
    user, agent = v.ident(node.user, "user"), v.ident(node.agent, "agent")
    session = v.ident(node.session)
    content = v.turn(node.content) if node.type is NodeType.EPISODIC else v.fact(node.content)
    v.scope(node.scope, user=user, agent=agent, session=session)
    v.json_value(node.value)
    procedure = node.procedure
    if procedure is not None:
        v.whole(procedure.times_used, "procedure.times_used")
        if procedure.success_rate is not None:
            v.unit(procedure.success_rate, "procedure.success_rate")
        if procedure.avg_duration_ms is not None:
            v.non_negative(procedure.avg_duration_ms, "procedure.avg_duration_ms")
        # as learn_procedure checks them: a bad trigger would put it in every prompt
        procedure = procedure.model_copy(update={"triggers": v.triggers(procedure.triggers)})
    if node.episode is not None and node.episode.duration_ms is not None:
        v.non_negative(node.episode.duration_ms, "episode.duration_ms")
    update: dict[str, Any] = {
        "content": content,
        "key": v.key(node.key),
        "category": v.category(node.category),
        "subject": v.label(node.subject, "subject", 200),
        "speaker": v.label(node.speaker, "speaker"),
        "source_role": v.label(node.source_role, "source_role", 40),
        "confidence": v.unit(node.confidence, "confidence"),
        "decay_rate": v.non_negative(node.decay_rate, "decay_rate"),
        "version": v.whole(node.version, "version", 1),
        "times_confirmed": v.whole(node.times_confirmed, "times_confirmed"),
        "times_contradicted": v.whole(node.times_contradicted, "times_contradicted"),
        "access_count": v.whole(node.access_count, "access_count"),
        "metadata": v.metadata(node.metadata),
        "procedure": procedure,
        **_times(node),
    }
    return node.model_copy(update=update)


def checked_version(version: MemoryVersion) -> MemoryVersion:
    """A memory's past version: its id, number, text (a fact's within the fact bounds:
    the import checks that, knowing the memory's type), value and session, as the write
    API checks them."""
    check_id(version.node_id)
    v.json_value(version.value)
    return version.model_copy(
        update={
            "version": v.whole(version.version, "version", 1),
            "content": v.turn(version.content),
            "source_session": v.ident(version.source_session),
            **_times(version),
        }
    )


def checked_edge(edge: Edge) -> Edge:
    check_id(edge.source_id)
    check_id(edge.target_id)
    for text in edge.evidence:
        v.label(text, "evidence", TURN_MAX)
    return edge.model_copy(
        update={
            "id": v.ident(edge.id, "edge"),
            "predicate": v.label(edge.predicate, "predicate"),
            "confidence": v.unit(edge.confidence, "confidence"),
            **_times(edge),
        }
    )


def checked_user(user: MemoryUser) -> MemoryUser:
    return user.model_copy(
        update={
            "id": v.required(user.id, "user"),
            "display_name": v.label(user.display_name, "display_name", 200),
            "identifiers": v.identifiers(user.identifiers),
            "preferences": v.metadata(user.preferences, "preferences"),
            "conversation_count": v.whole(user.conversation_count, "conversation_count"),
            "merged_into": v.ident(user.merged_into, "merged_into user"),
            **_times(user),
        }
    )


def checked_entity(entity: Entity) -> Entity:
    """An entity as ``save_entity`` checks one: its id, name, aliases, summary and
    attributes."""
    name = v.name(entity.canonical_name, "canonical_name")
    return entity.model_copy(
        update={
            "id": v.short_ref(entity.id, "entity"),
            "canonical_name": name,
            "aliases": v.aliases(entity.aliases, name),
            "summary": v.label(entity.summary, "summary", 2000),
            "mention_count": v.whole(entity.mention_count, "mention_count"),
            "attributes": v.metadata(entity.attributes, "attributes"),
            **_times(entity),
        }
    )


class Link(BaseModel):
    """A memory ↔ entity link (``node_entities``): the memory mentions the entity."""

    model_config = ConfigDict(extra="forbid")

    node_id: str
    entity_id: str


def checked_link(link: Link) -> Link:
    check_id(link.node_id)
    v.short_ref(link.entity_id, "entity")
    return link


def checked_thread(thread: Thread) -> Thread:
    """A conversation thread as ``save_thread`` checks one (system messages dropped)."""
    messages = v.thread_messages(thread.messages)
    return thread.model_copy(
        update={
            "id": v.required(thread.id, "thread"),
            "user": v.ident(thread.user, "user"),
            "agent": v.ident(thread.agent, "agent"),
            "messages": messages,
            "message_count": len(messages),
            "summary": v.label(thread.summary, "summary", TURN_MAX),
            **_times(thread),
        }
    )


class SessionRecord(BaseModel):
    """A session as consolidation records it: first seen, and consolidated (or pending)."""

    model_config = ConfigDict(extra="forbid")

    session: str
    user: str | None = None
    agent: str | None = None
    first_seen_at: datetime
    consolidated_at: datetime | None = None


def checked_session(record: SessionRecord) -> SessionRecord:
    return record.model_copy(
        update={
            "session": v.required(record.session, "session"),
            "user": v.ident(record.user, "user"),
            "agent": v.ident(record.agent, "agent"),
            **_times(record),
        }
    )


def checked_source(source: KnowledgeSource) -> KnowledgeSource:
    """A knowledge source (a file of the knowledge tier) as ``knowledge add`` stores one."""
    check_id(source.id)
    return source.model_copy(
        update={
            "collection": check_collection(source.collection),
            "path": v.label(source.path, "path", 4096),
            "title": v.label(source.title, "title", 1000) if source.title else "",
            "content_hash": v.label(source.content_hash, "content_hash", 200),
            "size_bytes": v.whole(source.size_bytes, "size_bytes"),
            "chunk_count": v.whole(source.chunk_count, "chunk_count"),
            "embedding_model": v.label(source.embedding_model, "embedding_model", 200),
            **_times(source),
        }
    )


def checked_chunk(chunk: KnowledgeChunk) -> KnowledgeChunk:
    """A chunk of a knowledge source: its id (``<source id>-<ordinal>``), text (kept as
    it is: its offsets point into the file) and offsets."""
    check_id(chunk.source_id)
    ordinal = v.whole(chunk.ordinal, "ordinal")
    if chunk.id != f"{chunk.source_id}-{ordinal}":
        raise ValidationError(f"a chunk's id is <source id>-<ordinal>, not {chunk.id!r}")
    text = chunk.text
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_FILE_BYTES:
        raise ValidationError(f"text must be 1 to {MAX_FILE_BYTES} characters")
    if "\x00" in text:
        raise ValidationError("text contains a NUL character")
    v.unicode_text(text, "text")
    start, end = v.whole(chunk.start_char, "start_char"), v.whole(chunk.end_char, "end_char")
    if end < start:
        raise ValidationError(f"end_char {end} is before start_char {start}")
    return chunk.model_copy(
        update={
            "collection": check_collection(chunk.collection),
            "heading": v.label(chunk.heading, "heading", 2000) if chunk.heading.strip() else "",
            "embedding_model": v.label(chunk.embedding_model, "embedding_model", 200),
        }
    )
