"""The write API's checks applied to an import's records (layer: service helpers).

Each record of a :mod:`memloci.transfer` import is checked as the write commands check
their input (:mod:`memloci.validate`) and returned cleaned as a write stores it.
"""

from __future__ import annotations

from typing import Any

from memloci import validate as v
from memloci.models import (
    TURN_MAX,
    Edge,
    MemoryNode,
    MemoryUser,
    MemoryVersion,
    NodeType,
    check_id,
)

_NODE_TIMES = (
    "event_time", "created_at", "updated_at", "valid_from", "valid_until", "last_accessed",
    "consolidated_at",
)  # fmt: skip


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
    }
    for name in _NODE_TIMES:
        update[name] = v.when(getattr(node, name), name)
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
            "created_at": v.when(version.created_at, "created_at"),
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
            "valid_from": v.when(edge.valid_from, "valid_from"),
            "valid_until": v.when(edge.valid_until, "valid_until"),
            "created_at": v.when(edge.created_at, "created_at"),
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
            "last_seen": v.when(user.last_seen, "last_seen"),
            "created_at": v.when(user.created_at, "created_at"),
        }
    )
