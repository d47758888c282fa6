"""Row ↔ model conversion for the SQL backends (layer: storage)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memloci.models import Edge, MemoryNode, MemoryUser, MemoryVersion, normalize_key, utcnow
from memloci.rules import revised
from memloci.storage import faults
from memloci.storage.base import NodePatch

NODE_COLUMNS = (
    "id",
    "namespace",
    "type",
    "content",
    "key",
    "value",
    "category",
    "subject",
    "fact_type",
    "scope",
    "user_id",
    "agent_id",
    "session_id",
    "speaker",
    "event_time",
    "created_at",
    "updated_at",
    "valid_from",
    "valid_until",
    "confidence",
    "times_confirmed",
    "times_contradicted",
    "access_count",
    "last_accessed",
    "decay_rate",
    "source_type",
    "source_role",
    "metadata",
    "version",
    "details",
    "consolidated_at",
    "embedded",
)
_TIME_FIELDS = {
    "event_time",
    "created_at",
    "updated_at",
    "valid_from",
    "valid_until",
    "last_accessed",
    "consolidated_at",
}
_RENAMED = {"user_id": "user", "agent_id": "agent", "session_id": "session"}


def content_hash(text: str) -> str:
    """Hash of the normalised text (case and whitespace folded): exact-duplicate check."""
    folded = re.sub(r"\s+", " ", text.strip().lower())
    return hashlib.sha1(folded.encode("utf-8")).hexdigest()[:20]


def _token(kind: str, value: str) -> str:
    return f"zz{kind}{hashlib.blake2b(value.encode(), digest_size=6).hexdigest()}0"


def owner_tokens(namespace: str, owner: str | None) -> str:
    """Words only memloci writes into the full-text index, so a MATCH can be narrowed to a
    namespace and to one user's (plus shared) memories before any ranking happens."""
    return f"{_token('ns', namespace)} {_token('u', owner) if owner else 'zzshared0'}"


def owner_match(namespaces: Sequence[str], user: str | None) -> str:
    """The FTS5 expression selecting rows visible in ``namespaces`` to ``user``.

    With a user, only the user token is used: FTS5's bm25() counts every phrase of the
    query over the whole index once per query, and a namespace token is in every row of
    its namespace (the SQL filter still checks the namespace).
    """
    if user is not None:
        return f"owner_tokens : ({_token('u', user)} OR zzshared0)"
    return "owner_tokens : (" + " OR ".join(_token("ns", ns) for ns in namespaces) + ")"


def bm25_idf(total: int, df: int) -> float:
    """FTS5's bm25 IDF, which both backends rank by: ``ln((N − df + 0.5) / (df + 0.5))``,
    at least 1e-6 (and defined when a count is newer than a cached ``total``)."""
    return max(math.log((max(total, df) - df + 0.5) / (df + 0.5)), 1e-6)


def dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def stored_json(column: str, raw: Any, where: str, empty: Any) -> Any:
    """A JSON column as stored. A damaged one (not JSON, or not of ``empty``'s kind when
    that is an object or a list) reads as ``empty`` and is reported once
    (:func:`memloci.storage.faults.damaged`), so one bad row never fails every search or
    list that meets it; ``memloci doctor --repair`` writes the empty value back.
    PostgreSQL's JSONB columns cannot hold such a value."""
    if raw is None:
        return empty
    if not isinstance(raw, str | bytes):
        return raw
    try:
        value = json.loads(raw)
    except ValueError as exc:
        faults.damaged("the store", column, f"{where}: {exc}")
        return empty
    if isinstance(empty, dict | list) and not isinstance(value, type(empty)):
        faults.damaged("the store", column, f"{where}: not a JSON {type(empty).__name__}")
        return empty
    return value


def node_from_row(row: Any) -> MemoryNode:
    data: dict[str, Any] = {}
    node_id = row[0]
    for name, value in zip(NODE_COLUMNS, row, strict=True):
        if name in _TIME_FIELDS:
            value = dt(value)
        elif name == "value":
            value = stored_json(name, value, f"memory {node_id}", None)
        elif name == "metadata":
            value = stored_json(name, value, f"memory {node_id}", {})
        elif name == "embedded":
            value = bool(value)
        elif name == "details":
            if value:
                details = stored_json(name, value, f"memory {node_id}", {})
                data["episode"] = details.get("episode")
                data["procedure"] = details.get("procedure")
            continue
        data[_RENAMED.get(name, name)] = value
    if data.get("metadata") is None:
        data["metadata"] = {}
    return MemoryNode.model_validate(data)


def first_version(node: MemoryNode, row: dict[str, Any]) -> tuple[Any, ...]:
    """A new memory's ``versions`` row (node_id, version, content, value,
    source_session, created_at), ``row`` being its :func:`node_to_row`."""
    return (node.id, node.version, node.content, row["value"], node.session, _ts(node.created_at))


def node_to_row(node: MemoryNode, context: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {}
    if node.episode is not None:
        details["episode"] = node.episode.model_dump(mode="json", exclude_none=True)
    if node.procedure is not None:
        details["procedure"] = node.procedure.model_dump(mode="json")
    return {
        "id": node.id,
        "namespace": node.namespace,
        "type": node.type.value,
        "content": node.content,
        "context": context,
        "date_text": f"{node.event_time.day} {node.event_time:%B %Y}",
        "owner_tokens": owner_tokens(
            node.namespace, node.user if node.scope.value == "user" else None
        ),
        "key": node.key,
        "key_norm": normalize_key(node.key) if node.key else None,
        "value": json.dumps(node.value) if node.value is not None else None,
        "category": node.category,
        "subject": node.subject,
        "fact_type": node.fact_type.value if node.fact_type else None,
        "scope": node.scope.value,
        "user_id": node.user,
        "agent_id": node.agent,
        "session_id": node.session,
        "speaker": node.speaker,
        "event_time": _ts(node.event_time),
        "created_at": _ts(node.created_at),
        "updated_at": _ts(node.updated_at),
        "valid_from": _ts(node.valid_from),
        "valid_until": _ts(node.valid_until),
        "confidence": node.confidence,
        "times_confirmed": node.times_confirmed,
        "times_contradicted": node.times_contradicted,
        "access_count": node.access_count,
        "last_accessed": _ts(node.last_accessed),
        "decay_rate": node.decay_rate,
        "source_type": node.source_type.value,
        "source_role": node.source_role,
        "metadata": json.dumps(node.metadata, sort_keys=True),
        "version": node.version,
        "details": json.dumps(details, sort_keys=True) if details else None,
        "consolidated_at": _ts(node.consolidated_at),
        "embedded": 0,
        "content_hash": content_hash(node.content),
    }


def version_from_row(row: Any) -> MemoryVersion:
    node_id, version, content, value, session, created = row
    return MemoryVersion(
        node_id=node_id,
        version=version,
        content=content,
        value=stored_json("value", value, f"version {version} of memory {node_id}", None),
        source_session=session,
        created_at=dt(created),
    )


def edge_from_row(row: Any) -> Edge:
    (eid, ns, src, dst, rel, pred, weight, conf, vfrom, vuntil, evidence, created) = row
    return Edge(
        id=eid,
        namespace=ns,
        source_id=src,
        target_id=dst,
        relation=rel,
        predicate=pred,
        weight=weight,
        confidence=conf,
        valid_from=dt(vfrom),
        valid_until=dt(vuntil),
        evidence=stored_json("evidence", evidence, f"edge {eid}", []),
        created_at=dt(created),
    )


def _activity(column: str, nodes: str, threads: str) -> str:
    """The greater of the stored ``column`` and what the user's episodes and threads
    show (``nodes`` / ``threads``: the aggregates): one SQL for both backends."""
    return (
        f"(SELECT max(x) FROM (SELECT u.{column} AS x"
        f" UNION ALL SELECT {nodes} FROM nodes n WHERE n.namespace = u.namespace"
        " AND n.user_id = u.id AND n.type = 'episodic'"
        f" UNION ALL SELECT {threads} FROM threads t WHERE t.namespace = u.namespace"
        " AND t.user_id = u.id) AS activity)"
    )


#: A memory user's conversations and last contact as they are read: the counts the
#: agent runtime keeps (``identify_user``), or, when turns were recorded some other way
#: (the SDK, an import, the demo), the distinct sessions of their episodes (or their
#: threads) and the newest episode or thread message.
USER_ACTIVITY = (
    _activity("conversation_count", "count(DISTINCT n.session_id)", "count(*)")
    + ", "
    + _activity("last_seen", "max(n.event_time)", "max(t.updated_at)")
)


def user_from_row(row: Any) -> MemoryUser:
    ns, uid, name, idents, prefs, count, last_seen, merged, created = row
    return MemoryUser(
        namespace=ns,
        id=uid,
        display_name=name,
        identifiers=stored_json("identifiers", idents, f"user {uid}", {}),
        preferences=stored_json("preferences", prefs, f"user {uid}", {}),
        conversation_count=count,
        last_seen=dt(last_seen),
        merged_into=merged,
        created_at=dt(created),
    )


def patched(node: MemoryNode, patch: NodePatch) -> tuple[MemoryNode, bool]:
    """``node`` as ``patch`` edits it (a new version by :func:`memloci.rules.revised`),
    and whether its text changed."""
    changes: dict[str, Any] = dict(patch.extra)
    for name in ("category", "subject", "metadata", "confidence", "decay_rate"):
        if getattr(patch, name) is not None:
            changes[name] = getattr(patch, name)
    if patch.times_confirmed_delta:
        changes["times_confirmed"] = node.times_confirmed + patch.times_confirmed_delta
    if patch.valid_until is not None:
        changes["valid_until"] = patch.valid_until
    new_content = revised(
        node, changes, content=patch.content, set_value=patch.set_value, value=patch.value
    )
    changes.setdefault("updated_at", utcnow())
    return node.model_copy(update=changes), new_content
