"""Reading an import (layer: service helpers): every line parsed and checked, then what
no single line shows.

:func:`parse` turns the lines of an export (:mod:`memloci.service.transfer`) into records, each
checked as the write API checks its input (:mod:`memloci.service.transfer.checks`); the first
problem is raised naming its line and field, before anything is written. Then the file
as a whole: an id given twice, a fact's old versions within the fact bounds, knowledge
chunks with their source.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pydantic

from memloci import validate as v
from memloci.errors import ConflictError, MemlociError, ValidationError
from memloci.models import (
    Edge,
    Entity,
    KnowledgeChunk,
    KnowledgeSource,
    MemoryNode,
    MemoryUser,
    MemoryVersion,
    NodeType,
    Thread,
)
from memloci.service.transfer.checks import (
    Link,
    SessionRecord,
    checked_chunk,
    checked_edge,
    checked_entity,
    checked_link,
    checked_node,
    checked_session,
    checked_source,
    checked_thread,
    checked_user,
    checked_version,
)
from memloci.validate import JSON_DEPTH_MAX, json_data

FORMAT, VERSION = "memloci", 3  # 2: the "end" line; 3: entities, links, threads, …
Lookup = Callable[[str], MemoryUser | None]  # a user by id


@dataclass
class Line:
    """One record of an import and where it is (``line 3``, or ``memory 2 of the array``)."""

    where: str
    record: Any  # MemoryNode, MemoryVersion, Edge, MemoryUser, Entity, Link, Thread, …
    vector: Any = None  # a memory's, entity name's or chunk's float32 vector, if given
    note: str | None = None  # a warning for the report (a vector left out)
    what: str = ""  # which record: ``memory 'a1B2c3D4'``


def parse(lines: Iterable[str], namespace: str) -> tuple[dict[str, Any], list[Line]]:
    """Every line parsed and checked as the write API checks its input (see
    :mod:`memloci.validate`); the first problem is raised, naming the line and field.
    An export of format version 2 or later must end with its ``end`` line, counting its
    records."""
    header: dict[str, Any] = {}
    records: list[Line] = []
    export: _Export | None = None  # the export (header) the lines belong to
    for number, line in enumerate(lines, start=1):
        if number == 1:
            line = line.lstrip("\ufeff")  # a byte order mark (a body sent over REST)
        if not line.strip():
            continue
        where, what = _where(number, header), ""
        try:
            data = json.loads(line)
            # the line's own levels (record, node; a thread's messages, message) + what
            # metadata / values may hold; shape only: each field's own check names a NUL
            json_data(data, "the record", depth=JSON_DEPTH_MAX + 3, nul=True)
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
            else:
                what = _what(kind, data)
                records.append(_record(kind, data, namespace, where, what))
        except (
            ValueError,
            KeyError,
            TypeError,
            AttributeError,
            binascii.Error,
            MemlociError,
            RecursionError,
        ) as exc:
            raise invalid(where, _problem(exc), what) from None
        if export is not None and export.header["version"] > VERSION:
            raise ValidationError(
                f"{where} is the header of format version {export.header['version']}, newer "
                f"than this memloci reads (1 to {VERSION})",
                hint="nothing was imported; upgrade memloci (pip install -U memloci) to import it",
            )
    _check_ended(export, len(records))
    _check_file(records)
    return header, records


@dataclass(frozen=True)
class _Kind:
    """One kind of record line: its model and check, how a problem names the record
    (``label`` and the field that identifies it), whether the record takes the import's
    namespace, and, for a line that may carry a vector, what happens when the vector is
    left out."""

    model: type[pydantic.BaseModel]
    check: Callable[[Any], Any]
    label: str
    ref: str = "id"
    in_namespace: bool = False
    instead: str | None = None


_KINDS = {
    "node": _Kind(MemoryNode, checked_node, "memory"),
    "version": _Kind(MemoryVersion, checked_version, "version of memory", ref="node_id"),
    "edge": _Kind(Edge, checked_edge, "edge", in_namespace=True),
    "user": _Kind(MemoryUser, checked_user, "user", in_namespace=True),
    "entity": _Kind(
        Entity, checked_entity, "entity", in_namespace=True, instead="its name is embedded again"
    ),
    "link": _Kind(Link, checked_link, "link of memory", ref="node_id"),
    "thread": _Kind(Thread, checked_thread, "thread", in_namespace=True),
    "session": _Kind(SessionRecord, checked_session, "session", ref="session"),
    "knowledge": _Kind(KnowledgeSource, checked_source, "knowledge source", in_namespace=True),
    "chunk": _Kind(
        KnowledgeChunk,
        checked_chunk,
        "knowledge chunk",
        in_namespace=True,
        instead="its source is embedded again",
    ),
}


def _what(kind: Any, data: dict[str, Any]) -> str:
    if not isinstance(kind, str) or kind not in _KINDS:
        return ""
    of = _KINDS[kind]
    return _label(of.label, data.get("node") if kind == "node" else data, of.ref)


def _record(kind: str, data: dict[str, Any], namespace: str, where: str, what: str) -> Line:
    """One record line (``data`` without its ``kind``), checked."""
    if kind == "node":
        raw = data["node"]
        if isinstance(raw, dict) and "scope" not in raw:  # as a write would: the
            raw = {**raw, "scope": narrowest(raw)}  # narrowest owner given
        node = checked_node(MemoryNode.model_validate(raw))
        node = node.model_copy(update={"namespace": namespace})
        again = "it is embedded again"
        return Line(where, node, *_vector(data.get("vector"), again), what=what)
    if kind not in _KINDS:
        raise ValueError(f"unknown record kind {kind!r}")
    of = _KINDS[kind]
    vector: tuple[Any, str | None] = (None, None)
    if of.instead is not None:
        vector = _vector(data.pop("vector", None), of.instead)
    if of.in_namespace:
        data = {**data, "namespace": namespace}
    return Line(where, of.check(of.model.model_validate(data)), *vector, what=what)


def narrowest(node: dict[str, Any]) -> str:
    """The scope of a memory whose record gives none: its narrowest owner."""
    return next((s for s in ("session", "user", "agent") if node.get(s)), "global")


def _where(number: int, header: dict[str, Any]) -> str:
    if header.get("array"):  # array_lines: line 1 is its header, memory n is line n + 1
        return f"memory {number - 1} of the array"
    return f"line {number} of the import"


def invalid(where: str, problem: str, what: str = "") -> ValidationError:
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


def _vector(value: Any, instead: str) -> tuple[Any, str | None]:
    """A vector from its base64 text, or None and why it is left out: a vector with a NaN
    or an infinity is not used (``instead`` says what happens then)."""
    if value is None:
        return None, None
    vector = np.frombuffer(base64.b64decode(value, validate=True), np.float32)
    if not np.isfinite(vector).all():
        return None, f"its vector is not finite (NaN or infinity): {instead}"
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


def _key(rec: Any) -> tuple[tuple[str, Any], str]:
    """What makes a record one of its kind, and how to name it."""
    if isinstance(rec, MemoryNode):
        return ("memory", rec.id), f"memory {rec.id!r}"
    if isinstance(rec, MemoryVersion):
        return ("version", (rec.node_id, rec.version)), (
            f"version {rec.version} of memory {rec.node_id!r}"
        )
    if isinstance(rec, Link):
        return ("link", (rec.node_id, rec.entity_id)), (
            f"the link of memory {rec.node_id!r} to entity {rec.entity_id!r}"
        )
    if isinstance(rec, SessionRecord):
        return ("session", rec.session), f"session {rec.session!r}"
    kind = next(of.label for of in _KINDS.values() if type(rec) is of.model)
    return (kind, rec.id), f"{kind} {rec.id!r}"


def _check_file(records: list[Line]) -> None:
    """What no single line shows: an id given twice (two memories, users or edges with
    one id, two copies of a version, …), a fact's old versions within the fact bounds,
    knowledge chunks with their source. (Users' channel ids are checked with the
    namespace's users, :func:`check_channels`.)"""
    seen: dict[tuple[str, Any], str] = {}
    types: dict[str, NodeType] = {}
    for line in records:
        key, what = _key(line.record)
        if isinstance(line.record, MemoryNode):
            types[line.record.id] = line.record.type
        if key in seen:
            raise invalid(line.where, f"{what} is given twice (also on {seen[key]})")
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
                raise invalid(line.where, exc.message, what) from None
    _check_chunks(records)


def _check_chunks(records: list[Line]) -> None:
    """Each chunk comes with its source, and a source with all its chunks."""
    sources = {r.id: line for line in records if isinstance(r := line.record, KnowledgeSource)}
    held = dict.fromkeys(sources, 0)
    for line in records:
        chunk = line.record
        if isinstance(chunk, KnowledgeChunk):
            if chunk.source_id not in sources:
                problem = f"its knowledge source {chunk.source_id!r} is not in the import"
                raise invalid(line.where, problem, line.what)
            held[chunk.source_id] += 1
    for sid, line in sources.items():
        if held[sid] != line.record.chunk_count:
            problem = f"chunk_count is {line.record.chunk_count}, the import holds {held[sid]}"
            raise invalid(line.where, problem, line.what)


def check_channels(users: list[Line], lookup: Lookup) -> None:
    """Two users of the import holding one channel id (``telegram 555``) are refused as
    ``save_user`` refuses the second, unless one is merged into the other (both lead to
    one user through ``merged_into``; ``lookup(user_id)`` finds a user to follow it)."""
    seen: dict[tuple[str, str], Line] = {}
    for line in users:
        user: MemoryUser = line.record
        for channel, ref in user.identifiers.items():
            other = seen.setdefault((channel, ref), line)
            if other is line:
                continue
            if root(other.record.id, lookup) != root(user.id, lookup):
                raise conflict(
                    line,
                    channel,
                    ref,
                    other.record.id,
                    f" (on {other.where.removesuffix(' of the import')})",
                )


def root(user_id: str, lookup: Lookup) -> str:
    """The user ``user_id`` was merged into, following ``merged_into`` to its end."""
    seen = {user_id}
    while True:
        user = lookup(user_id)
        if user is None or user.merged_into is None or user.merged_into in seen:
            return user_id
        user_id = user.merged_into
        seen.add(user_id)


def conflict(line: Line, channel: str, ref: str, holder: str, where: str = "") -> ConflictError:
    return ConflictError(
        f"{line.where} is invalid ({line.what}): {channel} id {ref!r} belongs to memory "
        f"user {holder!r}{where}",
        hint="nothing was imported; merge the two users (merged_into) or give the id to one",
    )
