"""Export / import as JSON Lines, and re-embedding (layer: service).

Format (one JSON object a line)::

    {"kind": "header", "format": "memloci", "version": 2, "namespace": …, "embedding_model": …}
    {"kind": "node", "node": {…MemoryNode…}, "vector": "<base64 float32>" | null}
    {"kind": "version", …MemoryVersion…}
    {"kind": "edge", …Edge…}
    {"kind": "user", …MemoryUser…}
    {"kind": "end", "records": 42}

The ``end`` line (format version 2) counts the records since the header, so a file cut
short, even at a line boundary, is refused; version 1 files have none and still import.
Lines may follow it (records added by hand, another export appended). Import validates
every line before it writes anything; vectors are reused when the file's embedding
model is the store's, otherwise (or when a vector is not finite) the memories are
re-embedded.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pydantic

from memloci import validate as v
from memloci.copies import copy_edges, copy_ids
from memloci.errors import MemlociError, NotFoundError, ValidationError
from memloci.models import (
    Edge,
    MemoryNode,
    MemoryUser,
    MemoryVersion,
    NodeType,
    short_id,
    utcnow,
)
from memloci.storage.base import PendingEmbedding, Store
from memloci.storage.rows import content_hash
from memloci.transfer_checks import checked_edge, checked_node, checked_user, checked_version
from memloci.validate import JSON_DEPTH_MAX, json_data

FORMAT, VERSION = "memloci", 2  # 2: the "end" line
Progress = Callable[[int], None]


def export_lines(store: Store, namespace: str, *, vectors: bool = True) -> Iterator[str]:
    """Every record of a namespace as JSON lines: the header, the records, the ``end``
    line counting them."""
    header = {
        "kind": "header", "format": FORMAT, "version": VERSION, "namespace": namespace,
        "embedding_model": store.get_meta("embedding_model"),
        "dimension": int(store.get_meta("dimension") or 0) or None,
        "exported_at": utcnow().isoformat(),
    }  # fmt: skip
    yield json.dumps(header)
    records = 0
    for line in _records(store, namespace, vectors=vectors):
        records += 1
        yield line
    yield json.dumps({"kind": "end", "records": records})


def _records(store: Store, namespace: str, *, vectors: bool) -> Iterator[str]:
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
        node.setdefault("scope", _narrowest(node))
        lines.append(json.dumps({"kind": "node", "node": node, "vector": None}))
    return lines


def write_lines(path: str, lines: Iterable[str]) -> int:
    """Write an export's ``lines`` to ``path``; returns how many. They go to a file beside
    it, renamed over ``path`` once all are written: a failure (a full disk, the store
    failing mid-way) leaves the previous file as it was and no half file. A pipe or a
    device (``/dev/stdout``) is written to directly."""
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        return _write(path, path, lines)
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
    try:
        count = _write(tmp, path, lines, new=True)
        try:
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
        with open(file, "x" if new else "w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line + "\n")
                count += 1
            fh.flush()
            if new:
                os.fsync(fh.fileno())
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
    if text.lstrip().startswith("["):
        return array_lines(text)
    return text.splitlines(keepends=True)


def _narrowest(node: dict[str, Any]) -> str:
    """The scope of a memory whose record gives none: its narrowest owner."""
    return next((s for s in ("session", "user", "agent") if node.get(s)), "global")


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


@dataclass
class _Line:
    """One record of an import and where it is (``line 3``, or ``memory 2 of the array``)."""

    where: str
    record: Any  # MemoryNode, MemoryVersion, Edge or MemoryUser
    vector: Any = None  # a memory's float32 vector, if the export holds one
    note: str | None = None  # a warning for the report (a vector left out)


def _where(number: int, header: dict[str, Any]) -> str:
    if header.get("array"):  # array_lines: line 1 is its header, memory n is line n + 1
        return f"memory {number - 1} of the array"
    return f"line {number} of the import"


def _invalid(where: str, problem: str, what: str = "") -> ValidationError:
    return ValidationError(
        f"{where} is invalid{f' ({what})' if what else ''}: {problem}",
        hint="nothing was imported; fix the file and retry",
    )


def _problem(exc: Exception) -> str:
    """What is wrong, in one line naming the field."""
    if isinstance(exc, MemlociError):
        return exc.message
    if isinstance(exc, pydantic.ValidationError):
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        return f"{loc}: {first['msg']}" if loc else str(first["msg"])
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text


def _parse(lines: Iterable[str], namespace: str) -> tuple[dict[str, Any], list[_Line]]:
    """Every line parsed and checked as the write API checks its input (see
    :mod:`memloci.validate`); the first problem is raised, naming the line and field.
    An export of format version 2 must end with its ``end`` line, counting its records."""
    header: dict[str, Any] = {}
    records: list[_Line] = []
    export: _Export | None = None  # the export (header) the lines belong to
    for number, line in enumerate(lines, start=1):
        if number == 1:
            line = line.lstrip("\ufeff")  # a byte order mark (a body sent over REST)
        if not line.strip():
            continue
        where, what = _where(number, header), ""
        try:
            data = json.loads(line)
            # the line's own 2 levels (record, node) + what metadata / values may hold
            # shape only: each field's own check names a NUL in it
            json_data(data, "the record", depth=JSON_DEPTH_MAX + 2, nul=True)
            if not isinstance(data, dict) or "kind" not in data:
                raise ValueError('not a memloci export record (no "kind")')
            kind = data.pop("kind")
            if kind == "header":
                _check_ended(export, len(records))
                header = _header(data)
                export = _Export(where, header, len(records))
            elif kind == "end":
                if export is None or export.ended:
                    raise ValueError("an end line without a header before it")
                export.end(_whole(data.get("records")), len(records))
            elif kind == "node":
                raw = data["node"]
                what = _label("memory", raw)
                if isinstance(raw, dict) and "scope" not in raw:  # as a write would: the
                    raw = {**raw, "scope": _narrowest(raw)}  # narrowest owner given
                node = checked_node(MemoryNode.model_validate(raw))
                node = node.model_copy(update={"namespace": namespace})
                records.append(_Line(where, node, *_vector(data.get("vector"))))
            elif kind == "version":
                what = _label("version of memory", data, "node_id")
                records.append(_Line(where, checked_version(MemoryVersion.model_validate(data))))
            elif kind == "edge":
                what = _label("edge", data)
                edge = Edge.model_validate({**data, "namespace": namespace})
                records.append(_Line(where, checked_edge(edge)))
            elif kind == "user":
                what = _label("user", data)
                user = MemoryUser.model_validate({**data, "namespace": namespace})
                records.append(_Line(where, checked_user(user)))
            else:
                raise ValueError(f"unknown record kind {kind!r}")
        except (
            ValueError, KeyError, TypeError, AttributeError, binascii.Error, MemlociError,
            RecursionError,
        ) as exc:  # fmt: skip
            raise _invalid(where, _problem(exc), what) from None
        if export is not None and export.header["version"] > VERSION:
            raise ValidationError(
                f"{where} is the header of format version {export.header['version']}, newer "
                f"than this memloci reads (1 to {VERSION})",
                hint="nothing was imported; upgrade memloci (pip install -U memloci) to import it",
            )
    _check_ended(export, len(records))
    _check_file(records)
    return header, records


def _header(data: dict[str, Any]) -> dict[str, Any]:
    """An export's header: format ``memloci``, a version number (1 when it gives none)."""
    if data.get("format") != FORMAT:
        raise ValueError("not a memloci export")
    _whole(data.setdefault("version", 1))  # a newer one is refused by the caller
    return data


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a count (a whole number)")
    return value


def _vector(value: Any) -> tuple[Any, str | None]:
    """A memory's vector from its base64 text, or None and why it is left out: a vector
    with a NaN or an infinity is embedded again, as one of another model is."""
    if value is None:
        return None, None
    vector = np.frombuffer(base64.b64decode(value, validate=True), np.float32)
    if not np.isfinite(vector).all():
        return None, "its vector is not finite (NaN or infinity): it is embedded again"
    return vector, None


@dataclass
class _Export:
    """One export of an import (a file may hold several, one after another): where its
    header is, the header, and how many records came before it."""

    where: str
    header: dict[str, Any]
    start: int
    ended: bool = False

    def end(self, count: int, records: int) -> None:
        """Its end line, counting ``count`` records; ``records`` were read in all."""
        held = records - self.start
        if held != count:
            cut = "the file is cut short" if held < count else "records were added to it"
            raise ValueError(f"it counts {count} records, the export holds {held}: {cut}")
        self.ended = True


def _check_ended(export: _Export | None, records: int) -> None:
    """A file cut short at a line boundary is refused: an export of format version 2
    ends with its end line (version 1 files, and JSON arrays, have none)."""
    if export is None or export.ended or export.header.get("array"):
        return
    if export.header["version"] >= 2:
        raise ValidationError(
            f"the import is cut short: the export whose header is on "
            f"{export.where.removesuffix(' of the import')} (format version "
            f"{export.header['version']}) has no end line ({records - export.start} records read)",
            hint="nothing was imported; export it again, or give the whole file",
        )


def _label(kind: str, data: Any, field: str = "id") -> str:
    """``memory 'a1B2c3D4'``: which record a problem is in (its id, if it has one)."""
    ref = data.get(field) if isinstance(data, dict) else None
    return f"{kind} {ref!r}" if isinstance(ref, str | int) and not isinstance(ref, bool) else kind


def _check_file(records: list[_Line]) -> None:
    """What no single line shows: an id given twice (two memories, users or edges with
    one id, two copies of a version), and a fact's old versions within the fact bounds."""
    seen: dict[tuple[str, Any], str] = {}
    types: dict[str, NodeType] = {}
    for line in records:
        rec = line.record
        key: tuple[str, Any]
        if isinstance(rec, MemoryNode):
            key, what = ("memory", rec.id), f"memory {rec.id!r}"
            types[rec.id] = rec.type
        elif isinstance(rec, MemoryVersion):
            key = ("version", (rec.node_id, rec.version))
            what = f"version {rec.version} of memory {rec.node_id!r}"
        elif isinstance(rec, Edge):
            key, what = ("edge", rec.id), f"edge {rec.id!r}"
        else:
            key, what = ("user", rec.id), f"user {rec.id!r}"
        if key in seen:
            raise _invalid(line.where, f"{what} is given twice (also on {seen[key]})")
        seen[key] = line.where.removesuffix(" of the import")
    for line in records:
        rec = line.record
        if (
            isinstance(rec, MemoryVersion)
            and rec.node_id in types
            and (types[rec.node_id] is not NodeType.EPISODIC)
        ):
            try:
                v.fact(rec.content)
            except ValidationError as exc:
                what = f"version {rec.version} of memory {rec.node_id!r}"
                raise _invalid(line.where, exc.message, what) from None


def import_lines(
    store: Store,
    lines: Iterable[str],
    namespace: str,
    *,
    embedding_model: str | None,
    dimension: int | None,
    progress: Progress | None = None,
) -> ImportReport:
    """Validate everything, then write nodes, versions, edges, users and reusable vectors
    in one transaction. A memory whose id the target namespace holds is skipped (importing
    a file twice adds nothing). Ids are unique across the store, so one whose id another
    namespace holds is copied under an id derived from it and the target namespace (a
    second import finds that copy and skips it), its versions and edges following it."""
    header, records = _parse(lines, namespace)
    report = ImportReport()
    nodes = [(line.record, line.vector) for line in records if isinstance(line.record, MemoryNode)]
    with store.batch():  # all records land, or none
        in_file = {n.id for n, _ in nodes}
        _check_edge_ends(store, namespace, records, in_file)
        _check_merged_users(store, namespace, records)
        held = store.id_namespaces(list(in_file))
        elsewhere = [i for i in in_file if i in held and held[i] != namespace]
        renamed, copied = copy_ids(store, namespace, elsewhere, taken=in_file.intersection)
        fresh = [
            (n.model_copy(update={"id": renamed.get(n.id, n.id)}), vec)
            for n, vec in nodes
            if held.get(n.id) != namespace and n.id not in copied
        ]
        report.skipped = len(nodes) - len(fresh)
        keep = {n.id for n, _ in nodes if held.get(n.id) != namespace and n.id not in copied}
        store.insert_nodes([n.model_copy(update={"embedded": False}) for n, _ in fresh])
        report.nodes = len(fresh)
        if progress:
            progress(len(nodes))
        versions = [
            r.model_copy(update={"node_id": renamed.get(r.node_id, r.node_id)})
            for line in records
            if isinstance(r := line.record, MemoryVersion) and r.node_id in keep
        ]
        store.import_versions(versions)
        report.versions = len(versions)
        edges = [
            r
            for line in records
            if isinstance(r := line.record, Edge) and (r.source_id in keep or r.target_id in keep)
        ]
        edge_ids = {e.id for e in edges}
        edges = copy_edges(store, namespace, edges, renamed, taken=edge_ids.intersection)
        store.insert_edges(edges)  # with the full-text windows of the turns they join
        report.edges = len(edges)
        for user in (line.record for line in records if isinstance(line.record, MemoryUser)):
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
    report.errors += [
        f"{line.where.removesuffix(' of the import')} (memory {line.record.id!r}): {line.note}"
        for line in records
        if line.note and isinstance(line.record, MemoryNode) and line.record.id in keep
    ]
    return report


def _check_edge_ends(store: Store, namespace: str, records: list[_Line], in_file: set[str]) -> None:
    """Refuse an import with an edge whose end is neither a memory of the import nor one
    already in the target namespace (an edge only joins memories of one namespace)."""
    edges = [line.record for line in records if isinstance(line.record, Edge)]
    ends = {i for e in edges for i in (e.source_id, e.target_id)}
    outside = sorted(ends - in_file)
    known = {n.id for n in store.get_nodes(namespace, outside)} if outside else set()
    missing = [i for i in outside if i not in known]
    if missing:
        raise ValidationError(
            f"the import has edges to memories that are neither in it nor in namespace "
            f"{namespace!r}: {', '.join(missing[:5])}",
            hint="nothing was imported; export and import whole namespaces",
        )


def _check_merged_users(store: Store, namespace: str, records: list[_Line]) -> None:
    """A user merged into another needs that other user, in the import or the namespace."""
    users = [line for line in records if isinstance(line.record, MemoryUser)]
    ids = {line.record.id for line in users}
    for line in users:
        user: MemoryUser = line.record
        target = user.merged_into
        if target is None or (target in ids and target != user.id):
            continue
        if target != user.id and store.get_user(namespace, target) is not None:
            continue
        problem = (
            "merged_into names the user itself"
            if target == user.id
            else f"merged_into {target!r} is not a user in the import or in namespace {namespace!r}"
        )
        raise _invalid(line.where, problem, f"user {user.id!r}")


def _same_size(rows: list[tuple[MemoryNode, Any]]) -> bool:
    return len({len(v) for _, v in rows}) == 1
