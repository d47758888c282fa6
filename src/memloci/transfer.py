"""Export / import as JSON Lines, and re-embedding (layer: service).

Format (one JSON object a line)::

    {"kind": "header", "format": "memloci", "version": 1, "namespace": …, "embedding_model": …}
    {"kind": "node", "node": {…MemoryNode…}, "vector": "<base64 float32>" | null}
    {"kind": "version", …MemoryVersion…}
    {"kind": "edge", …Edge…}
    {"kind": "user", …MemoryUser…}

Import validates every line before it writes anything; vectors are reused when
the file's embedding model is the store's, otherwise the memories are re-embedded.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memloci.errors import MemlociError, ValidationError
from memloci.models import (
    TURN_MAX,
    Edge,
    MemoryNode,
    MemoryUser,
    MemoryVersion,
    check_id,
    short_id,
    utcnow,
)
from memloci.storage.base import PendingEmbedding, Store
from memloci.storage.rows import content_hash
from memloci.validate import JSON_DEPTH_MAX, json_data

FORMAT, VERSION = "memloci", 1
Progress = Callable[[int], None]


def export_lines(store: Store, namespace: str, *, vectors: bool = True) -> Iterator[str]:
    """Every record of a namespace as JSON lines (header first)."""
    header = {
        "kind": "header", "format": FORMAT, "version": VERSION, "namespace": namespace,
        "embedding_model": store.get_meta("embedding_model"),
        "dimension": int(store.get_meta("dimension") or 0) or None,
        "exported_at": utcnow().isoformat(),
    }  # fmt: skip
    yield json.dumps(header)
    batch: list[MemoryNode] = []

    def flush() -> Iterator[str]:
        vecs = store.vectors(namespace, [n.id for n in batch]) if vectors else {}
        for node in batch:
            blob = vecs.get(node.id)
            yield json.dumps(
                {
                    "kind": "node",
                    "node": node.model_dump(mode="json"),
                    "vector": base64.b64encode(blob).decode() if blob else None,
                }
            )
        batch.clear()

    for node in store.iter_nodes(namespace):
        batch.append(node)
        if len(batch) >= 200:
            yield from flush()
    yield from flush()
    for version in store.iter_versions(namespace):
        yield json.dumps({"kind": "version", **version.model_dump(mode="json")})
    for edge in store.iter_edges(namespace):
        yield json.dumps({"kind": "edge", **edge.model_dump(mode="json")})
    offset = 0
    while users := store.list_users(namespace, limit=500, offset=offset):
        for user in users:
            yield json.dumps({"kind": "user", **user.model_dump(mode="json")})
        offset += len(users)


ARRAY_FIELDS = (
    "content", "category", "created_at", "updated_at", "metadata", "user", "agent",
    "session", "subject", "key", "value", "confidence", "version", "scope", "id",
)  # fmt: skip


def array_lines(text: str) -> list[str]:
    """A JSON array export (``memloci memory export -o file.json``, reference 004's
    format: one object per current memory) as import lines: each object becomes a
    node without a vector (it is embedded after the import). Memories keep their id,
    content, category, type, times, owner, subject, key / value, confidence, version
    and metadata; the scope is the exported one, or the narrowest owner given."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValidationError(
            f"the import is not valid JSON: {str(exc).splitlines()[0]}",
            hint="give a `memloci memory export` file (a JSON array or JSON Lines)",
        ) from None
    if not isinstance(data, list):
        raise ValidationError(
            "a JSON import must be an array of memories",
            hint="give a `memloci memory export` file (a JSON array or JSON Lines)",
        )
    lines = [json.dumps({"kind": "header", "format": FORMAT, "version": VERSION})]
    for number, record in enumerate(data, start=1):
        if not isinstance(record, dict) or not isinstance(record.get("content"), str):
            raise ValidationError(
                f"memory {number} of the array is invalid: an object with a content string"
                " is required",
                hint="nothing was imported; fix the file and retry",
            )
        node = {k: record[k] for k in ARRAY_FIELDS if record.get(k) is not None}
        node["type"] = record.get("memory_type") or "semantic"
        when = record.get("created_at") or utcnow().isoformat()
        node.setdefault("id", short_id())
        node.setdefault("created_at", when)
        node.setdefault("updated_at", node["created_at"])
        node.setdefault("event_time", node["created_at"])
        node.setdefault("valid_from", node["created_at"])
        if "scope" not in node:
            owner = next((s for s in ("session", "user", "agent") if node.get(s)), "global")
            node["scope"] = owner
        lines.append(json.dumps({"kind": "node", "node": node, "vector": None}))
    return lines


@dataclass
class ImportReport:
    nodes: int = 0
    skipped: int = 0
    versions: int = 0
    edges: int = 0
    users: int = 0
    vectors_reused: int = 0
    needs_embedding: int = 0
    errors: list[str] = field(default_factory=list)


def _parse(lines: Iterable[str], namespace: str) -> tuple[dict[str, Any], list[Any]]:
    header: dict[str, Any] = {}
    records: list[Any] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            # the line's own 2 levels (record, node) + what metadata / values may hold
            json_data(data, "the record", depth=JSON_DEPTH_MAX + 2)
            if not isinstance(data, dict) or "kind" not in data:
                raise ValueError('not a memloci export record (no "kind")')
            kind = data.pop("kind")
            if kind == "header":
                if data.get("format") != FORMAT:
                    raise ValueError("not a memloci export")
                header = data
            elif kind == "node":
                node = _checked(MemoryNode.model_validate(data["node"]))
                vector = data.get("vector")
                if vector is not None:
                    vector = np.frombuffer(base64.b64decode(vector, validate=True), np.float32)
                records.append((node.model_copy(update={"namespace": namespace}), vector))
            elif kind == "version":
                records.append(MemoryVersion.model_validate(data))
            elif kind == "edge":
                records.append(Edge.model_validate({**data, "namespace": namespace}))
            elif kind == "user":
                records.append(MemoryUser.model_validate({**data, "namespace": namespace}))
            else:
                raise ValueError(f"unknown record kind {kind!r}")
        except (
            ValueError, KeyError, TypeError, AttributeError, binascii.Error, MemlociError,
            RecursionError,
        ) as exc:  # fmt: skip
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValidationError(
                f"line {number} of the import is invalid: {first}",
                hint="nothing was imported; fix the file and retry",
            ) from None
    return header, records


def import_lines(
    store: Store,
    lines: Iterable[str],
    namespace: str,
    *,
    embedding_model: str | None,
    dimension: int | None,
    progress: Progress | None = None,
) -> ImportReport:
    """Validate everything, then write nodes (new ids only), versions, edges, users and
    reusable vectors in one transaction."""
    header, records = _parse(lines, namespace)
    report = ImportReport()
    with store.batch():  # all records land, or none
        nodes = [r for r in records if isinstance(r, tuple)]
        fresh = [(n, vec) for n, vec in nodes if not store.id_exists(n.id)]
        report.skipped = len(nodes) - len(fresh)
        keep = {n.id for n, _ in fresh}
        _check_edge_ends(store, namespace, records, keep)
        store.insert_nodes([n.model_copy(update={"embedded": False}) for n, _ in fresh])
        report.nodes = len(fresh)
        if progress:
            progress(len(nodes))
        versions = [r for r in records if isinstance(r, MemoryVersion) and r.node_id in keep]
        store.import_versions(versions)
        report.versions = len(versions)
        edges = [
            r
            for r in records
            if isinstance(r, Edge) and (r.source_id in keep or r.target_id in keep)
        ]
        store.insert_edges(edges)
        report.edges = len(edges)
        for user in (r for r in records if isinstance(r, MemoryUser)):
            if store.get_user(namespace, user.id) is None:
                store.upsert_user(user)
                report.users += 1
        same_model = (
            embedding_model is not None
            and header.get("embedding_model") == embedding_model
            and header.get("dimension") == dimension
        )
        with_vec = [(n, v) for n, v in fresh if v is not None] if same_model else []
        if with_vec and dimension:
            items = [
                PendingEmbedding(
                    n.id, content_hash(n.content), n.content, n.speaker, n.key, n.subject
                )
                for n, _ in with_vec
            ]
            mat = np.stack([v for _, v in with_vec]) if _same_size(with_vec) else None
            if mat is not None and mat.shape[1] == dimension:
                report.vectors_reused = store.save_embeddings(items, mat)
        report.needs_embedding = report.nodes - report.vectors_reused
    return report


def _check_edge_ends(store: Store, namespace: str, records: list[Any], fresh: set[str]) -> None:
    """Refuse an import with an edge whose end is neither a node the import adds nor a
    node already in the target namespace (an edge only joins memories of one namespace)."""
    ends = {i for r in records if isinstance(r, Edge) for i in (r.source_id, r.target_id)}
    outside = sorted(ends - fresh)
    known = {n.id for n in store.get_nodes(namespace, outside)} if outside else set()
    missing = [i for i in outside if i not in known]
    if missing:
        raise ValidationError(
            f"the import has edges to memories that are neither in it nor in namespace "
            f"{namespace!r}: {', '.join(missing[:5])}",
            hint="nothing was imported; export and import whole namespaces",
        )


def _same_size(rows: list[tuple[MemoryNode, Any]]) -> bool:
    return len({len(v) for _, v in rows}) == 1


def _checked(node: MemoryNode) -> MemoryNode:
    """The bounds the write API enforces, applied to imported nodes too."""
    check_id(node.id)
    if not node.content.strip() or len(node.content) > TURN_MAX:
        raise ValueError(f"content must be 1–{TURN_MAX} characters")
    for name in ("confidence", "decay_rate"):
        value = getattr(node, name)
        if not math.isfinite(value) or value < 0 or (name == "confidence" and value > 1):
            raise ValueError(f"{name} {value} is out of range")
    return node
