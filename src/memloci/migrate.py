"""Copy a whole store to another one, e.g. SQLite → PostgreSQL (layer: service).

``memloci migrate --from memloci.db --to postgresql://…`` runs :func:`migrate`. Everything
goes through the :class:`~memloci.storage.base.Store` protocol, so any backend pair works
(SQLite → PostgreSQL, back, SQLite → SQLite). Copied, namespace by namespace: memories
(with every field: validity, confidence, access counts, consolidation marks), their
vectors, versions, edges, entities and the memory ↔ entity links, entity name vectors,
users, conversation threads, consolidation sessions, knowledge sources with their chunks
and chunk vectors; then API keys (hashes only) and the store metadata that is not
backend-specific (embedding model, ``last_maintenance``, the key-required marker).
Not copied: decay anchors and maintenance cursors (rebuilt by the next maintenance run).

The target must be empty unless ``force``: then records whose id it already holds are
skipped (memories, entities, keys) or replaced (users, threads, knowledge sources,
sessions), so an interrupted migration can be run again. Each batch is one transaction.
At the end both stores are counted (:func:`inventory`) and a difference is an error.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from memloci.compose import open_store
from memloci.errors import ConflictError, NotFoundError, StorageError
from memloci.models import Edge, MemoryNode
from memloci.storage.base import PendingEmbedding, Store
from memloci.storage.location import describe, is_database_url
from memloci.storage.rows import content_hash

BATCH = 500
COPIED_META = ("last_maintenance", "auth_required")
#: What :func:`inventory` counts, in the order a migration copies it.
KINDS = (
    "nodes", "vectors", "versions", "edges", "entities", "links", "entity_vectors",
    "users", "threads", "sessions", "knowledge_sources", "knowledge_chunks",
    "knowledge_vectors", "keys",
)  # fmt: skip
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


def inventory(store: Store) -> dict[str, int]:
    """How many records of each kind (:data:`KINDS`) the store holds, all namespaces."""
    out = dict.fromkeys(KINDS, 0)
    model = store.get_meta("embedding_model")
    for ns in store.record_namespaces():
        for nodes in _batches(store.iter_nodes(ns)):
            ids = [n.id for n in nodes]
            out["nodes"] += len(nodes)
            out["vectors"] += len(store.vectors(ns, ids))
            out["links"] += sum(len(v) for v in store.node_entities(ns, ids).values())
        out["versions"] += sum(1 for _ in store.iter_versions(ns))
        out["edges"] += sum(1 for _ in store.iter_edges(ns))
        out["entities"] += store.count_entities(ns)
        out["entity_vectors"] += len(store.entity_vectors(ns, model)) if model else 0
        out["users"] += store.count_users(ns)
        out["threads"] += store.count_threads(ns)
        out["sessions"] += len(store.sessions(ns))
        for src in store.knowledge_sources(ns):
            out["knowledge_sources"] += 1
            out["knowledge_chunks"] += len(store.knowledge_chunks(ns, src.id))
            out["knowledge_vectors"] += len(store.knowledge_vectors(ns, src.id))
    out["keys"] = len(store.list_keys(include_revoked=True))
    return out


def is_empty(store: Store) -> bool:
    """No record in any namespace and no API key."""
    return not store.record_namespaces() and not store.list_keys(include_revoked=True)


class _Copier:
    def __init__(self, source: Store, target: Store, progress: Progress | None) -> None:
        self.src, self.dst = source, target
        self.progress = progress
        self.report = MigrationReport("", "")
        self.model = source.get_meta("embedding_model")

    def done(self, kind: str, n: int, skipped: int = 0) -> None:
        self.report.copied[kind] = self.report.copied.get(kind, 0) + n
        if skipped:
            self.report.skipped[kind] = self.report.skipped.get(kind, 0) + skipped
        if self.progress and n + skipped:
            self.progress(kind, n + skipped)

    def run(self) -> MigrationReport:
        dim = self.src.get_meta("dimension")
        if self.model and dim:
            self.dst.bind_embedder(self.model, int(dim))  # refuses another model
        namespaces = self.src.record_namespaces()
        self.report.namespaces = namespaces
        # into an empty PostgreSQL store: the HNSW index is built once, after the copy
        bulk = getattr(self.dst, "bulk_load", None) if is_empty(self.dst) else None
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
        for entities in _batches(
            _pages(lambda o: src.list_entities(ns, limit=BATCH, offset=o))
        ):  # fmt: skip
            with dst.batch():
                fresh = [e for e in entities if dst.get_entity(ns, e.id) is None]
                for entity in fresh:
                    dst.insert_entity(entity)
            self.done("entities", len(fresh), len(entities) - len(fresh))
        copied: set[str] = set()
        for nodes in _batches(src.iter_nodes(ns)):
            copied |= self.nodes(ns, nodes)
        versions = (v for v in src.iter_versions(ns) if v.node_id in copied)
        for batch in _batches(versions):
            dst.import_versions(batch)
            self.done("versions", len(batch))
        edges = (e for e in src.iter_edges(ns) if self._keeps(e, copied))
        for edge_batch in _batches(edges):
            dst.insert_edges(edge_batch)
            self.done("edges", len(edge_batch))
        if self.model:
            vectors = src.entity_vectors(ns, self.model)
            with dst.batch():
                for entity_id, blob in vectors.items():
                    dst.save_entity_vector(ns, entity_id, self.model, blob)
            self.done("entity_vectors", len(vectors))
        for users in _batches(_pages(lambda o: src.list_users(ns, limit=BATCH, offset=o))):
            with dst.batch():
                for user in users:
                    dst.upsert_user(user)
            self.done("users", len(users))
        self.threads(ns)
        sessions = src.sessions(ns)
        with dst.batch():
            for s in sessions:
                dst.register_session(ns, s.session, user=s.user, agent=s.agent,
                                     now=s.first_seen_at)  # fmt: skip
                if s.consolidated_at is not None:
                    dst.finish_session(ns, s.session, user=s.user, agent=s.agent,
                                       now=s.consolidated_at)  # fmt: skip
        self.done("sessions", len(sessions))
        self.knowledge(ns)

    @staticmethod
    def _keeps(edge: Edge, copied: set[str]) -> bool:
        return edge.source_id in copied or edge.target_id in copied

    def nodes(self, ns: str, nodes: list[MemoryNode]) -> set[str]:
        """Copy one batch of memories with their vectors and entity links (one
        transaction); returns the ids copied (those the target did not hold)."""
        src, dst = self.src, self.dst
        ids = [n.id for n in nodes]
        vectors = src.vectors(ns, ids)
        links = src.node_entities(ns, ids)
        with dst.batch():
            fresh = [n for n in nodes if not dst.id_exists(n.id)]
            dst.insert_nodes([n.model_copy(update={"embedded": False}) for n in fresh])
            with_vec = [n for n in fresh if n.id in vectors]
            saved = 0
            if with_vec:
                items = [
                    PendingEmbedding(
                        n.id, content_hash(n.content), n.content, n.speaker, n.key, n.subject
                    )
                    for n in with_vec
                ]
                matrix = np.stack([np.frombuffer(vectors[n.id], np.float32) for n in with_vec])
                saved = dst.save_embeddings(items, matrix)
            linked = 0
            for n in fresh:
                entity_ids = [e.id for e in links.get(n.id, [])]
                if entity_ids:
                    linked += dst.link_entities(ns, n.id, entity_ids)
        self.done("nodes", len(fresh), len(nodes) - len(fresh))
        self.done("vectors", saved)
        self.done("links", linked)
        return {n.id for n in fresh}

    def threads(self, ns: str) -> None:
        src, dst = self.src, self.dst
        for listed in _batches(_pages(lambda o: src.list_threads(ns, limit=200, offset=o))):
            with dst.batch():
                for item in listed:
                    thread = src.get_thread(ns, item.id)
                    if thread is not None:
                        dst.upsert_thread(thread)
            self.done("threads", len(listed))

    def knowledge(self, ns: str) -> None:
        src, dst = self.src, self.dst
        for source in src.knowledge_sources(ns):
            chunks = src.knowledge_chunks(ns, source.id)
            blobs = src.knowledge_vectors(ns, source.id)
            matrix = None
            if chunks and all(c.id in blobs for c in chunks):
                matrix = np.stack([np.frombuffer(blobs[c.id], np.float32) for c in chunks])
            dst.replace_knowledge(source, chunks, matrix)
            self.done("knowledge_sources", 1)
            self.done("knowledge_chunks", len(chunks))
            self.done("knowledge_vectors", 0 if matrix is None else len(chunks))

    def keys(self) -> None:
        fresh = skipped = 0
        for key in self.src.list_keys(include_revoked=True):
            found = self.src.get_key(key.id)
            if found is None:
                continue
            if self.dst.get_key(key.id) is not None:
                skipped += 1
                continue
            self.dst.insert_key(*found)
            fresh += 1
        self.done("keys", fresh, skipped)


def copy_store(source: Store, target: Store, *, progress: Progress | None = None
               ) -> MigrationReport:  # fmt: skip
    """Copy every record of ``source`` into ``target`` (see the module docstring)."""
    return _Copier(source, target, progress).run()


def migrate_stores(
    source: Store, target: Store, *, force: bool = False, progress: Progress | None = None,
    source_name: str = "source", target_name: str = "target",
) -> MigrationReport:  # fmt: skip
    """Refuse a non-empty target unless ``force``; copy; count both stores; raise
    :class:`~memloci.errors.StorageError` when the target lacks anything the source has."""
    if not force and not is_empty(target):
        raise ConflictError(
            f"{target_name} is not empty",
            hint="migrate into an empty store, or pass --force to copy into it anyway "
            "(records it already holds are skipped)",
        )
    counts = inventory(source)
    report = copy_store(source, target, progress=progress)
    report.source, report.target = source_name, target_name
    report.source_counts, report.target_counts = counts, inventory(target)
    short = [k for k in KINDS if report.target_counts[k] < counts[k]]
    if short:
        detail = ", ".join(f"{k} {report.target_counts[k]}/{counts[k]}" for k in short)
        raise StorageError(
            f"the migration to {target_name} is incomplete: {detail}",
            hint="run it again with --force to copy what is missing",
        )
    return report


def migrate(
    source: str, target: str, *, force: bool = False, progress: Progress | None = None,
    before_copy: Callable[[dict[str, int]], None] | None = None,
) -> MigrationReport:  # fmt: skip
    """:func:`migrate_stores` between two locations (paths or ``postgresql://`` URLs).
    ``before_copy(counts)`` is told the source's counts first (e.g. to size a bar)."""
    if source == target:
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
            src, dst, force=force, progress=progress, source_name=describe(source),
            target_name=describe(target),
        )  # fmt: skip
