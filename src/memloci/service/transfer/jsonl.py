"""Export / import as JSON Lines (layer: service).

Format (one JSON object a line)::

    {"kind": "header", "format": "memloci", "version": 3, "namespace": …,
     "embedding_model": …, "dimension": …, "document_form": …, "exported_at": …}
    {"kind": "node", "node": {…MemoryNode…}, "vector": "<base64 float32>" | null}
    {"kind": "link", "node_id": …, "entity_id": …}
    {"kind": "version", …MemoryVersion…}
    {"kind": "edge", …Edge…}
    {"kind": "user", …MemoryUser…}
    {"kind": "entity", …Entity…, "vector": "<base64 float32>" | null}
    {"kind": "thread", …Thread (with its messages)…}
    {"kind": "session", "session": …, "user": …, "agent": …, "first_seen_at": …,
     "consolidated_at": …}
    {"kind": "knowledge", …KnowledgeSource…}
    {"kind": "chunk", …KnowledgeChunk…, "vector": "<base64 float32>" | null}
    {"kind": "end", "records": 42}

The ``end`` line (format version 2) counts the records since the header, so a file cut
short, even at a line boundary, is refused; version 1 files have none and still import.
Version 3 adds entities (with their name vectors), the memory ↔ entity links, threads,
consolidation sessions and knowledge (sources, chunks, chunk vectors), and the header's
``document_form``: the form the memories' vectors were embedded in
(:data:`~memloci.retrieval.query.DOCUMENT_FORM`). Lines may follow the end line (records
added by hand, another export appended). Import validates every line before it writes
anything (:mod:`memloci.service.transfer.parse`); memory vectors are reused when the file's
embedding model and form are the store's model and the current form, otherwise (or
when a vector is not finite) the memories are re-embedded; knowledge chunks keep their
vectors when their model is the store's, else they are embedded after the import.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from memloci.errors import NotFoundError, ValidationError
from memloci.models import (
    Edge,
    Entity,
    MemoryNode,
    MemoryUser,
    MemoryVersion,
    short_id,
    utcnow,
)
from memloci.retrieval.query import DOCUMENT_FORM
from memloci.service.transfer.copies import copy_edges, copy_ids
from memloci.service.transfer.entities import ImportModel
from memloci.service.transfer.parse import FORMAT, VERSION, Line, invalid, narrowest, parse
from memloci.service.transfer.records import (
    check_store,
    every,
    link_lines,
    record_lines,
    write_records,
)
from memloci.service.transfer.report import ImportReport
from memloci.storage.base import PendingEmbedding, Store
from memloci.storage.locks import entities_lock, users_lock
from memloci.storage.rows import content_hash

Progress = Callable[[int], None]


def export_lines(store: Store, namespace: str, *, vectors: bool = True) -> Iterator[str]:
    """Every record of a namespace as JSON lines: the header, the records, the ``end``
    line counting them."""
    model = store.get_meta("embedding_model")
    header = {
        "kind": "header",
        "format": FORMAT,
        "version": VERSION,
        "namespace": namespace,
        "embedding_model": model,
        "dimension": int(store.get_meta("dimension") or 0) or None,
        # the form the vectors are in (a store without the record holds form "1")
        "document_form": (store.get_meta("document_form") or "1") if model else None,
        "exported_at": utcnow().isoformat(),
    }
    yield json.dumps(header)
    records = 0
    for line in _records(store, namespace, vectors=vectors):
        records += 1
        yield line
    yield json.dumps({"kind": "end", "records": records})


def _records(store: Store, namespace: str, *, vectors: bool) -> Iterator[str]:
    """The records, whole even while others write (the server keeps serving): versions,
    edges and links only of the memories and entities the file holds (a turn added after
    the memories were read is left out with its edge to the previous turn), and entities,
    users and threads each read in one query (paging by mention count or last update
    would skip or repeat a record that changed between two pages)."""
    batch: list[MemoryNode] = []
    exported: set[str] = set()
    entities = every(lambda n: store.entities.list_entities(namespace, limit=n))
    entity_ids = {e.id for e in entities}

    def flush() -> Iterator[str]:
        ids = [n.id for n in batch]
        exported.update(ids)
        vecs = store.search.vectors(namespace, ids) if vectors else {}
        for node in batch:
            blob = vecs.get(node.id)
            yield json.dumps(
                {
                    "kind": "node",
                    "node": node.model_dump(mode="json"),
                    "vector": base64.b64encode(blob).decode() if blob else None,
                }
            )
        yield from link_lines(store, namespace, ids, entity_ids)
        batch.clear()

    for node in store.memories.iter_nodes(namespace):
        batch.append(node)
        if len(batch) >= 200:
            yield from flush()
    yield from flush()
    for version in store.memories.iter_versions(namespace):
        if version.node_id in exported:
            yield json.dumps({"kind": "version", **version.model_dump(mode="json")})
    for edge in store.memories.iter_edges(namespace):
        if edge.source_id in exported and edge.target_id in exported:
            yield json.dumps({"kind": "edge", **edge.model_dump(mode="json")})
    for user in every(lambda n: store.people.list_users(namespace, limit=n)):
        yield json.dumps({"kind": "user", **user.model_dump(mode="json")})
    yield from record_lines(store, namespace, vectors=vectors, entities=entities)


ARRAY_FIELDS = (
    "content",
    "category",
    "created_at",
    "updated_at",
    "metadata",
    "user",
    "agent",
    "session",
    "subject",
    "key",
    "value",
    "confidence",
    "version",
    "scope",
    "id",
    "event_time",
    "speaker",
    "fact_type",
    "procedure",
)


def array_lines(text: str) -> list[str]:
    """A JSON array export (``memloci memory export -o file.json``: one object per
    current memory) as import lines: each object becomes a
    node without a vector (it is embedded after the import). Memories keep their id,
    content, category, type, times (``event_time``: ``created_at`` when not given),
    owner, speaker, subject, key / value, fact type, confidence, version, metadata and a
    procedure's details (its triggers); the scope is the exported one, or the narrowest
    owner given."""
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
    header = {"kind": "header", "format": FORMAT, "version": VERSION, "array": True}
    lines = [json.dumps(header)]  # "array": errors name the memory, not the line
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
        node.setdefault("scope", narrowest(node))
        lines.append(json.dumps({"kind": "node", "node": node, "vector": None}))
    return lines


def write_lines(path: str, lines: Iterable[str]) -> int:
    """Write an export's ``lines`` to ``path``; returns how many. They go to a file beside
    it, renamed over ``path`` once all are written: a failure (a full disk, the store
    failing mid-way) leaves the previous file as it was and no half file. A new file is
    readable by its owner only (0600, as the store it copies); one replaced keeps its
    mode. A pipe or a device (``/dev/stdout``) is written to directly."""
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        return _write(path, path, lines)
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
    try:
        count = _write(tmp, path, lines, new=True)
        try:
            with contextlib.suppress(FileNotFoundError):  # a backup replaced keeps its mode
                os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
            os.replace(tmp, path)
        except OSError as exc:
            raise ValidationError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):  # gone once renamed
            os.unlink(tmp)
    return count


def _write(file: str, path: str, lines: Iterable[str], *, new: bool = False) -> int:
    count = 0
    try:
        # a new file is for its owner only (0600), as the store it copies
        opener = (lambda f, flags: os.open(f, flags, 0o600)) if new else None
        with open(file, "x" if new else "w", encoding="utf-8", opener=opener) as fh:
            for line in lines:
                fh.write(line + "\n")
                count += 1
            fh.flush()
            if new:
                os.fsync(fh.fileno())
    except BrokenPipeError:
        raise  # the reader stopped (``| head``): the command ends quietly, not an error
    except OSError as exc:
        raise ValidationError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    return count


def read_lines(path: str) -> list[str]:
    """The import lines of an export file: JSON Lines (the full backup) or a JSON array
    of memories (``memloci memory export -o file.json``, see :func:`array_lines`)."""
    try:
        with open(path, encoding="utf-8-sig") as fh:  # a byte order mark is not a line
            text = fh.read()
    except FileNotFoundError:
        raise NotFoundError(f"no file {path!r}", hint="check the path") from None
    except IsADirectoryError:
        raise ValidationError(
            f"{path!r} is a directory, not an export file",
            hint="give the path of a `memloci memory export` file",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read {path!r}: {exc}") from None
    if not text.strip():  # every export has at least its header line
        raise ValidationError(
            f"{path!r} is empty: not a memloci export",
            hint="give the path of a `memloci memory export` file",
        )
    if text.lstrip().startswith("["):
        return array_lines(text)
    return text.splitlines(keepends=True)


def import_lines(
    store: Store,
    lines: Iterable[str],
    namespace: str,
    *,
    embedding_model: str | None,
    dimension: int | None,
    progress: Progress | None = None,
) -> ImportReport:
    """Validate everything, then write every record and the reusable vectors in one
    transaction. A memory whose id the target namespace holds is skipped (importing a
    file twice adds nothing), as are entities, threads, sessions and knowledge sources it
    holds; an entity named as exactly one entity of the namespace (case and punctuation
    aside, of a type that fits) is merged into it (:mod:`memloci.service.transfer.entities`).
    Memory, edge and entity ids are unique across the store, so one whose id
    another namespace holds is copied under an id derived from it and the target
    namespace (a second import finds that copy and skips it), its versions, edges and
    links following it."""
    header, records = parse(lines, namespace)
    report = ImportReport()
    nodes = [(line.record, line.vector) for line in records if isinstance(line.record, MemoryNode)]
    same_model = (
        embedding_model is not None
        and header.get("embedding_model") == embedding_model
        and header.get("dimension") == dimension
    )
    # all records land, or none; one import at a time across servers (ids are checked,
    # then written), the namespace's users and entities read and merged under their locks
    with (
        store.batch(),
        store.exclusive("import"),
        store.exclusive(users_lock(namespace)),
        store.exclusive(entities_lock(namespace)),
    ):
        in_file = {n.id for n, _ in nodes}
        _check_edge_ends(store, namespace, records, in_file)
        _check_merged_users(store, namespace, records)
        entity_ids = {line.record.id for line in records if isinstance(line.record, Entity)}
        check_store(store, namespace, records, in_file, entity_ids)
        held = store.memories.id_namespaces(list(in_file))
        elsewhere = [i for i in in_file if i in held and held[i] != namespace]
        renamed, copied = copy_ids(store, namespace, elsewhere, taken=in_file.intersection)
        fresh = [
            (n.model_copy(update={"id": renamed.get(n.id, n.id)}), vec)
            for n, vec in nodes
            if held.get(n.id) != namespace and n.id not in copied
        ]
        report.skipped = len(nodes) - len(fresh)
        keep = {n.id for n, _ in nodes if held.get(n.id) != namespace and n.id not in copied}
        store.memories.insert_nodes([n.model_copy(update={"embedded": False}) for n, _ in fresh])
        report.nodes = len(fresh)
        if progress:
            progress(len(nodes))
        versions = [
            r.model_copy(update={"node_id": renamed.get(r.node_id, r.node_id)})
            for line in records
            if isinstance(r := line.record, MemoryVersion) and r.node_id in keep
        ]
        store.memories.import_versions(versions)
        report.versions = len(versions)
        edges = [
            r
            for line in records
            if isinstance(r := line.record, Edge) and (r.source_id in keep or r.target_id in keep)
        ]
        edge_ids = {e.id for e in edges}
        edges = copy_edges(store, namespace, edges, renamed, taken=edge_ids.intersection)
        store.memories.insert_edges(edges)  # with the full-text windows of the turns they join
        report.edges = len(edges)
        for user in (line.record for line in records if isinstance(line.record, MemoryUser)):
            if store.people.get_user(namespace, user.id) is None:
                store.people.upsert_user(user)
                report.users += 1
        model = ImportModel(embedding_model, dimension, same_model)
        write_records(store, namespace, records, renamed, report, model)
        # vectors of another form than the worker embeds now are embedded again
        current = same_model and header.get("document_form") == DOCUMENT_FORM
        with_vec = [(n, v) for n, v in fresh if v is not None] if current else []
        if with_vec and dimension:
            items = [
                PendingEmbedding(
                    n.id, content_hash(n.content), n.content, n.speaker, n.key, n.subject
                )
                for n, _ in with_vec
            ]
            mat = np.stack([v for _, v in with_vec]) if _same_size(with_vec) else None
            if mat is not None and mat.shape[1] == dimension:
                report.vectors_reused = store.search.save_embeddings(items, mat)
        report.needs_embedding = report.nodes - report.vectors_reused
    report.errors += [
        f"{line.where.removesuffix(' of the import')} ({line.what}): {line.note}"
        for line in records
        if line.note and (not isinstance(line.record, MemoryNode) or line.record.id in keep)
    ]
    return report


def _check_edge_ends(store: Store, namespace: str, records: list[Line], in_file: set[str]) -> None:
    """Refuse an import with an edge whose end is neither a memory of the import nor one
    already in the target namespace (an edge only joins memories of one namespace)."""
    edges = [line.record for line in records if isinstance(line.record, Edge)]
    ends = {i for e in edges for i in (e.source_id, e.target_id)}
    outside = sorted(ends - in_file)
    known = {n.id for n in store.memories.get_nodes(namespace, outside)} if outside else set()
    missing = [i for i in outside if i not in known]
    if missing:
        raise ValidationError(
            f"the import has edges to memories that are neither in it nor in namespace "
            f"{namespace!r}: {', '.join(missing[:5])}",
            hint="nothing was imported; export and import whole namespaces",
        )


def _check_merged_users(store: Store, namespace: str, records: list[Line]) -> None:
    """A user merged into another needs that other user, in the import or the namespace."""
    users = [line for line in records if isinstance(line.record, MemoryUser)]
    ids = {line.record.id for line in users}
    for line in users:
        user: MemoryUser = line.record
        target = user.merged_into
        if target is None or (target in ids and target != user.id):
            continue
        if target != user.id and store.people.get_user(namespace, target) is not None:
            continue
        problem = (
            "merged_into names the user itself"
            if target == user.id
            else f"merged_into {target!r} is not a user in the import or in namespace {namespace!r}"
        )
        raise invalid(line.where, problem, f"user {user.id!r}")


def _same_size(rows: list[tuple[MemoryNode, Any]]) -> bool:
    return len({len(v) for _, v in rows}) == 1
