"""Copy a whole store to another one, e.g. SQLite → PostgreSQL (layer: service).

``memloci migrate --from memloci.db --to postgresql://…`` runs :func:`migrate`. Everything
goes through the :class:`~memloci.storage.base.Store` protocol, so any backend pair works
(SQLite → PostgreSQL, back, SQLite → SQLite). Copied, namespace by namespace: memories
(with every field: validity, confidence, access counts, consolidation marks), their
vectors, versions, edges, entities and the memory ↔ entity links, entity name vectors,
users, conversation threads, consolidation sessions, knowledge sources with their chunks
and chunk vectors; then API keys (hashes only) and the store metadata that is not
backend-specific (embedding model, the form its vectors are embedded in
(``document_form``), ``last_maintenance``, the key-required marker).
Not copied: decay anchors and maintenance cursors (rebuilt by the next maintenance run).

The target must be empty unless ``force``: then records whose id the namespace already
holds are skipped (memories, versions, edges, entities, keys) or replaced (users,
threads, knowledge sources, sessions), so an interrupted migration can be run again and
completes: the versions and edges of every memory are copied, whichever run copied the
memory. Ids of memories, edges and entities are unique across a store, so one that another
namespace of the target holds is copied under an id derived from it (as an import does,
:mod:`memloci.service.transfer.copies`), and found again by the next run. Each batch is
one transaction.
At the end both stores are counted namespace by namespace (:func:`inventory`) and a
namespace holding less than it does in the source is an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from memloci.errors import ConflictError, NotFoundError, StorageError
from memloci.models import MemoryNode, MemoryVersion
from memloci.service.compose import open_store
from memloci.service.transfer.copies import copy_edges, copy_ids, entity_copies
from memloci.storage.base import PendingEmbedding, Store
from memloci.storage.location import describe, is_database_url
from memloci.storage.rows import content_hash

BATCH = 500
COPIED_META = ("last_maintenance", "auth_required")
#: What :func:`inventory` counts, in the order a migration copies it.
KINDS = (
    "nodes",
    "vectors",
    "versions",
    "edges",
    "entities",
    "links",
    "entity_vectors",
    "users",
    "threads",
    "sessions",
    "knowledge_sources",
    "knowledge_chunks",
    "knowledge_vectors",
    "keys",
)
Progress = Callable[[str, int], None]  # (kind, how many more were copied)
T = TypeVar("T")


@dataclass
class MigrationReport:
    source: str
    target: str
    namespaces: list[str] = field(default_factory=list)
    copied: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    source_counts: dict[str, int] = field(default_factory=dict)
    target_counts: dict[str, int] = field(default_factory=dict)


def _pages(fetch: Callable[[int], Sequence[T]]) -> Iterator[T]:
    offset = 0
    while page := fetch(offset):
        yield from page
        offset += len(page)


def _batches(items: Iterator[T], size: int = BATCH) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def namespace_counts(store: Store, ns: str) -> dict[str, int]:
    """How many records of each kind (:data:`KINDS`, but ``keys``) namespace ``ns`` holds."""
    out = dict.fromkeys(KINDS, 0)
    del out["keys"]
    model = store.get_meta("embedding_model")
    for nodes in _batches(store.memories.iter_nodes(ns)):
        ids = [n.id for n in nodes]
        out["nodes"] += len(nodes)
        out["vectors"] += len(store.search.vectors(ns, ids))
        out["links"] += sum(len(v) for v in store.entities.node_entities(ns, ids).values())
    out["versions"] += sum(1 for _ in store.memories.iter_versions(ns))
    out["edges"] += sum(1 for _ in store.memories.iter_edges(ns))
    out["entities"] += store.entities.count_entities(ns)
    out["entity_vectors"] += len(store.jobs.entity_vectors(ns, model)) if model else 0
    out["users"] += store.people.count_users(ns)
    out["threads"] += store.people.count_threads(ns)
    out["sessions"] += len(store.sessions(ns))
    for src in store.knowledge.knowledge_sources(ns):
        out["knowledge_sources"] += 1
        out["knowledge_chunks"] += len(store.knowledge.knowledge_chunks(ns, src.id))
        out["knowledge_vectors"] += len(store.knowledge_vectors(ns, src.id))
    return out


def inventory(
    store: Store, *, by_namespace: dict[str, dict[str, int]] | None = None
) -> dict[str, int]:
    """How many records of each kind (:data:`KINDS`) the store holds, all namespaces;
    ``by_namespace``, if given, is filled with each namespace's own counts."""
    out = dict.fromkeys(KINDS, 0)
    for ns in store.record_namespaces():
        counts = namespace_counts(store, ns)
        if by_namespace is not None:
            by_namespace[ns] = counts
        for kind, n in counts.items():
            out[kind] += n
    out["keys"] = len(store.people.list_keys(include_revoked=True))
    return out


def is_empty(store: Store) -> bool:
    """No record in any namespace and no API key."""
    return not store.record_namespaces() and not store.people.list_keys(include_revoked=True)


class _Copier:
    def __init__(self, source: Store, target: Store, progress: Progress | None) -> None:
        self.src, self.dst = source, target
        self.progress = progress
        self.report = MigrationReport("", "")
        self.model = source.get_meta("embedding_model")
        self.empty = False  # the target held nothing when the copy began

    def done(self, kind: str, n: int, skipped: int = 0) -> None:
        self.report.copied[kind] = self.report.copied.get(kind, 0) + n
        if skipped:
            self.report.skipped[kind] = self.report.skipped.get(kind, 0) + skipped
        if self.progress and n + skipped:
            self.progress(kind, n + skipped)

    def run(self) -> MigrationReport:
        dim = self.src.get_meta("dimension")
        self.empty = is_empty(self.dst)
        if self.model and dim:
            unbound = self.dst.get_meta("embedding_model") is None
            self.dst.bind_embedder(self.model, int(dim))  # refuses another model
            self.dst.set_meta("document_form", _form(self.src, self.dst, self.empty or unbound))
        namespaces = self.src.record_namespaces()
        self.report.namespaces = namespaces
        # into an empty PostgreSQL store: the HNSW index is built once, after the copy
        bulk = getattr(self.dst, "bulk_load", None) if self.empty else None
        with bulk() if bulk is not None else contextlib.nullcontext():
            for ns in namespaces:
                self.namespace(ns)
        self.keys()
        for key in COPIED_META:
            value = self.src.get_meta(key)
            if value is not None:
                self.dst.set_meta(key, value)
        return self.report

    def namespace(self, ns: str) -> None:
        src, dst = self.src, self.dst
        entity_ids = self.entities(ns)
        renamed: dict[str, str] = {}  # memories copied under a derived id (this run or before)
        mine: set[str] = set()  # memories the target held in ns that differ from the source's
        for nodes in _batches(src.memories.iter_nodes(ns)):
            renamed |= self.nodes(ns, nodes, entity_ids, mine)
        self.versions(ns, renamed, mine)
        self.edges(ns, renamed)
        if self.model:
            vectors = src.jobs.entity_vectors(ns, self.model)
            with dst.batch():
                for entity_id, blob in vectors.items():
                    dst.jobs.save_entity_vector(
                        ns, entity_ids.get(entity_id, entity_id), self.model, blob
                    )
            self.done("entity_vectors", len(vectors))
        for users in _batches(_pages(lambda o: src.people.list_users(ns, limit=BATCH, offset=o))):
            with dst.batch():
                for user in users:
                    dst.people.upsert_user(user)
            self.done("users", len(users))
        self.threads(ns)
        sessions = src.sessions(ns)
        with dst.batch():
            for s in sessions:
                dst.jobs.register_session(
                    ns, s.session, user=s.user, agent=s.agent, now=s.first_seen_at
                )
                if s.consolidated_at is not None:
                    dst.jobs.finish_session(
                        ns, s.session, user=s.user, agent=s.agent, now=s.consolidated_at
                    )
        self.done("sessions", len(sessions))
        self.knowledge(ns)

    def entities(self, ns: str) -> dict[str, str]:
        """Copy the entities the target lacks; returns those stored under another id
        (their id was another namespace's: an id derived from it, found again by the
        next run, :func:`~memloci.service.transfer.copies.entity_copies`)."""
        src, dst = self.src, self.dst
        moved: dict[str, str] = {}

        def taken(ids: list[str]) -> set[str]:
            return self._taken(ids, entities=True)

        for entities in _batches(
            _pages(lambda o: src.entities.list_entities(ns, limit=BATCH, offset=o))
        ):
            with dst.batch():
                renamed, present = entity_copies(dst, ns, [e.id for e in entities], taken=taken)
                moved |= renamed
                fresh = [e for e in entities if e.id not in present]
                for entity in fresh:
                    wanted = renamed.get(entity.id, entity.id)
                    stored = dst.entities.insert_entity(entity.model_copy(update={"id": wanted}))
                    if stored.id != entity.id:
                        moved[entity.id] = stored.id
            self.done("entities", len(fresh), len(entities) - len(fresh))
        return moved

    def _taken(self, ids: list[str], *, edges: bool = False, entities: bool = False) -> set[str]:
        """Ids the source holds (memories, edges or entities still to copy): no copy
        takes one."""
        return set(self.src.memories.id_namespaces(ids, edges=edges, entities=entities))

    def nodes(
        self, ns: str, nodes: list[MemoryNode], entity_ids: dict[str, str], mine: set[str]
    ) -> dict[str, str]:
        """Copy one batch of memories with their vectors and entity links (one
        transaction): those the namespace does not hold, under a derived id when another
        namespace holds theirs. Returns the derived ids (of copies made now or before);
        adds to ``mine`` the memories the namespace holds that differ from the source's."""
        src, dst = self.src, self.dst
        ids = [n.id for n in nodes]
        vectors = src.search.vectors(ns, ids)
        links = src.entities.node_entities(ns, ids)
        with dst.batch():
            held = dst.memories.id_namespaces(ids)
            elsewhere = [i for i in ids if i in held and held[i] != ns]
            renamed, copied = copy_ids(dst, ns, elsewhere, taken=self._taken)
            fresh = [n for n in nodes if held.get(n.id) != ns and n.id not in copied]
            mine |= _changed(dst, ns, [n for n in nodes if held.get(n.id) == ns])
            dst.memories.insert_nodes(
                [
                    n.model_copy(update={"id": renamed.get(n.id, n.id), "embedded": False})
                    for n in fresh
                ]
            )
            with_vec = [n for n in fresh if n.id in vectors]
            saved = 0
            if with_vec:
                items = [
                    PendingEmbedding(
                        renamed.get(n.id, n.id),
                        content_hash(n.content),
                        n.content,
                        n.speaker,
                        n.key,
                        n.subject,
                    )
                    for n in with_vec
                ]
                matrix = np.stack([np.frombuffer(vectors[n.id], np.float32) for n in with_vec])
                saved = dst.search.save_embeddings(items, matrix)
            linked = 0
            for n in fresh:
                targets = [entity_ids.get(e.id, e.id) for e in links.get(n.id, [])]
                if targets:
                    linked += dst.entities.link_entities(ns, renamed.get(n.id, n.id), targets)
        self.done("nodes", len(fresh), len(nodes) - len(fresh))
        self.done("vectors", saved)
        self.done("links", linked)
        return renamed

    def versions(self, ns: str, renamed: dict[str, str], mine: set[str]) -> None:
        """Every version of the namespace's memories, whichever run copied them, but
        those the target holds as they are; a memory the target held changed (``mine``)
        keeps its own versions and gains only those it lacks."""
        src, dst = self.src, self.dst
        have = (
            {}
            if self.empty
            else {(v.node_id, v.version): _digest(v) for v in dst.memories.iter_versions(ns)}
        )

        def wanted(v: MemoryVersion) -> bool:
            held = have.get((v.node_id, v.version))
            return held is None or (v.node_id not in mine and held != _digest(v))

        for batch in _batches(src.memories.iter_versions(ns)):
            mapped = [
                v.model_copy(update={"node_id": renamed.get(v.node_id, v.node_id)}) for v in batch
            ]
            keep = [v for v in mapped if wanted(v)]
            dst.memories.import_versions(keep)
            self.done("versions", len(keep), len(batch) - len(keep))

    def edges(self, ns: str, renamed: dict[str, str]) -> None:
        """Every edge of the namespace that the target lacks (its turns' full-text
        windows follow, see :meth:`~memloci.storage.base.Store.insert_edges`)."""
        src, dst = self.src, self.dst

        def taken(ids: list[str]) -> set[str]:
            return self._taken(ids, edges=True)

        for batch in _batches(src.memories.iter_edges(ns)):
            with dst.batch():
                fresh = copy_edges(dst, ns, batch, renamed, taken=taken)
                dst.memories.insert_edges(fresh)
            self.done("edges", len(fresh), len(batch) - len(fresh))

    def threads(self, ns: str) -> None:
        src, dst = self.src, self.dst
        for listed in _batches(_pages(lambda o: src.people.list_threads(ns, limit=200, offset=o))):
            with dst.batch():
                for item in listed:
                    thread = src.people.get_thread(ns, item.id)
                    if thread is not None:
                        dst.people.upsert_thread(thread)
            self.done("threads", len(listed))

    def knowledge(self, ns: str) -> None:
        src, dst = self.src, self.dst
        for source in src.knowledge.knowledge_sources(ns):
            chunks = src.knowledge.knowledge_chunks(ns, source.id)
            blobs = src.knowledge_vectors(ns, source.id)
            matrix = None
            if chunks and all(c.id in blobs for c in chunks):
                matrix = np.stack([np.frombuffer(blobs[c.id], np.float32) for c in chunks])
            dst.knowledge.replace_knowledge(source, chunks, matrix)
            self.done("knowledge_sources", 1)
            self.done("knowledge_chunks", len(chunks))
            self.done("knowledge_vectors", 0 if matrix is None else len(chunks))

    def keys(self) -> None:
        fresh = skipped = 0
        for key in self.src.people.list_keys(include_revoked=True):
            found = self.src.people.get_key(key.id)
            if found is None:
                continue
            if self.dst.people.get_key(key.id) is not None:
                skipped += 1
                continue
            self.dst.people.insert_key(*found)
            fresh += 1
        self.done("keys", fresh, skipped)


def _form(source: Store, target: Store, fresh: bool) -> str:
    """The form the target's vectors are in once the source's are copied
    (:data:`~memloci.retrieval.query.DOCUMENT_FORM`; a store without the record holds
    form "1"): the source's into a ``fresh`` target, else the older of the two, so
    ``memloci reembed`` offers to rebuild vectors of an older form."""
    theirs = source.get_meta("document_form") or "1"
    if fresh:
        return theirs
    ours = target.get_meta("document_form") or "1"
    return min(theirs, ours, key=lambda form: int(form) if form.isdigit() else 0)


def _digest(version: MemoryVersion) -> bytes:
    return hashlib.sha256(version.model_dump_json().encode()).digest()


def _changed(store: Store, ns: str, nodes: list[MemoryNode]) -> set[str]:
    """Which of ``nodes`` (the source's) the store holds in ``ns`` with other text or
    another version number: its own memory under that id, not a copy of this one."""
    if not nodes:
        return set()
    theirs = {n.id: n for n in store.memories.get_nodes(ns, [n.id for n in nodes])}
    return {
        n.id
        for n in nodes
        if (t := theirs.get(n.id)) is None or (t.content, t.version) != (n.content, n.version)
    }


def copy_store(
    source: Store, target: Store, *, progress: Progress | None = None
) -> MigrationReport:
    """Copy every record of ``source`` into ``target`` (see the module docstring)."""
    return _Copier(source, target, progress).run()


def migrate_stores(
    source: Store,
    target: Store,
    *,
    force: bool = False,
    progress: Progress | None = None,
    source_name: str = "source",
    target_name: str = "target",
) -> MigrationReport:
    """Refuse a non-empty target unless ``force``; copy; count both stores; raise
    :class:`~memloci.errors.StorageError` when the target lacks anything the source has."""
    if not force and not is_empty(target):
        raise ConflictError(
            f"{target_name} is not empty",
            hint="migrate into an empty store, or pass --force to copy into it anyway "
            "(records it already holds are skipped)",
        )
    before: dict[str, dict[str, int]] = {}
    counts = inventory(source, by_namespace=before)
    report = copy_store(source, target, progress=progress)
    report.source, report.target = source_name, target_name
    after: dict[str, dict[str, int]] = {}
    report.source_counts, report.target_counts = counts, inventory(target, by_namespace=after)
    short = []
    for ns, want in before.items():  # per namespace: another one's records make up nothing
        got = after.get(ns, {})
        lacking = [f"{k} {got.get(k, 0)}/{n}" for k, n in want.items() if got.get(k, 0) < n]
        if lacking:
            short.append(f"namespace {ns!r}: {', '.join(lacking)}")
    if report.target_counts["keys"] < counts["keys"]:
        short.append(f"keys {report.target_counts['keys']}/{counts['keys']}")
    if short:
        raise StorageError(
            f"the migration to {target_name} is incomplete: {'; '.join(short)}",
            hint="run it again with --force to copy what is missing",
        )
    return report


def _same_file(a: str, b: str) -> bool:
    """Whether two SQLite paths name one file (however spelt: relative, a symlink)."""
    if is_database_url(a) or is_database_url(b):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): not the same
        return False


def migrate(
    source: str,
    target: str,
    *,
    force: bool = False,
    progress: Progress | None = None,
    before_copy: Callable[[dict[str, int]], None] | None = None,
) -> MigrationReport:
    """:func:`migrate_stores` between two locations (paths or ``postgresql://`` URLs).
    ``before_copy(counts)`` is told the source's counts first (e.g. to size a bar)."""
    if source == target or _same_file(source, target):  # "s.db" and "./s.db" too
        raise ConflictError("--from and --to name the same store")
    if not is_database_url(source) and not os.path.exists(source):
        raise NotFoundError(f"no memory store at {source}", hint="check --from")
    with ExitStack() as stack:
        src = open_store(source)
        stack.callback(src.close)
        dst = open_store(target)
        stack.callback(dst.close)
        if before_copy is not None:
            before_copy(inventory(src))
        return migrate_stores(
            src,
            dst,
            force=force,
            progress=progress,
            source_name=describe(source),
            target_name=describe(target),
        )
