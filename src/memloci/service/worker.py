"""The slow path (layer: service): a background thread that embeds new memories in
batches, links new conversation turns to the entities they mention, and applies
access reinforcement, off the caller's hot path."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from memloci.consolidation.speakers import SpeakerNames
from memloci.errors import MemlociError, NotFoundError, StorageError
from memloci.exiting import exiting
from memloci.models import Entity, EntityType, short_id
from memloci.providers.base import Embedder
from memloci.retrieval.mentions import leading_name, mentions, speaker_name
from memloci.retrieval.query import DOCUMENT_FORM, document_text
from memloci.storage.base import Store
from memloci.storage.locks import entities_lock

log = logging.getLogger("memloci.worker")
MAX_BACKOFF = 30.0  # seconds between attempts while the embedder keeps failing


def bind_embedder(store: Store, embedder: Embedder) -> bool:
    """Record the embedder's model in the store (a different model is refused, see
    :meth:`Store.bind_embedder`); returns whether the store is bound now.

    An embedder that cannot tell its dimension yet (an OpenAI-compatible endpoint that is
    down at open) never blocks opening: a store that already holds this model keeps its
    recorded dimension; a new store is bound by the worker's first successful batch."""
    try:
        dimension = embedder.dimension
    except MemlociError as exc:
        known, stored = store.get_meta("embedding_model"), store.get_meta("dimension")
        if known is None or not stored:
            log.warning("embedder unavailable at open (%s); full-text search until it answers", exc)
            return False
        dimension = int(stored)  # a different model is still refused just below
        log.warning("embedder unavailable at open (%s); vectors follow when it answers", exc)
    bind(store, embedder.model_id, dimension)
    return True


def bind(store: Store, model_id: str, dimension: int) -> None:
    """Bind ``store`` to the model (:meth:`Store.bind_embedder`); a store that had no
    vectors yet also records the form its memories are embedded in (``document_form``)."""
    fresh = store.get_meta("embedding_model") is None
    store.bind_embedder(model_id, dimension)
    if fresh:
        store.set_meta("document_form", DOCUMENT_FORM)


def stale_vectors(store: Store, model_id: str) -> bool:
    """Whether the store holds vectors that ``reembed`` rebuilds: from another model than
    ``model_id``, or embedded in an older form (:func:`outdated_form`)."""
    known = store.get_meta("embedding_model")
    return known is not None and (known != model_id or outdated_form(store))


def outdated_form(store: Store) -> bool:
    """Whether the store's vectors were embedded in an older form than
    :func:`~memloci.retrieval.query.document_text`'s (``memloci reembed`` rebuilds them)."""
    if store.get_meta("embedding_model") is None:
        return False
    return (store.get_meta("document_form") or "1") != DOCUMENT_FORM


CATCH_UP = 32  # a backlog a query embeds itself rather than miss (see catch_up)
CATCH_UP_WAIT = 10.0  # seconds a query waits for a small batch already being embedded


class EmbeddingWorker:
    """Embeds pending nodes in batches; ``flush()`` waits until nothing is pending."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        batch_size: int = 64,
        link_mentions: bool = True,
        register_mentions: bool = False,
        bound: bool = True,
    ) -> None:
        """``bound=False``: the store has no embedding model recorded yet (the embedder was
        unreachable at open); the first batch embedded records it."""
        self.store = store
        self.bound = bound
        self.embedder = embedder
        self.batch_size = batch_size
        self.link_mentions = link_mentions
        self.register_mentions = register_mentions
        self.speakers = SpeakerNames()  # names of speakers labelled by role or handle
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._embedding = threading.Lock()  # one batch at a time, whoever asks
        self._touches: dict[str, set[str]] = {}
        self._links: list[str] = []  # memories written with their vector, to link
        self.last_error: str | None = None
        self._failures = 0  # consecutive failed attempts (backoff, one warning per outage)
        self._thread = threading.Thread(target=self._run, name="memloci-embedder", daemon=True)
        self._thread.start()
        self.wake()

    def wake(self) -> None:
        self._idle.clear()
        self._wake.set()

    def touch(self, namespace: str, ids: list[str]) -> None:
        """Count an access of these memories (reinforcement). Applied by the background
        thread within a second, or at ``flush``/``close``: a burst of searches makes one
        write, not one each, and does not wake the thread while queries run."""
        with self._lock:
            self._touches.setdefault(namespace, set()).update(ids)

    def link(self, ids: Sequence[str]) -> None:
        """Link these memories to the entities they are about, in the background (facts
        that ``remember`` stored with their vector never pass through a batch)."""
        if not self.link_mentions or not ids:
            return
        with self._lock:
            self._links.extend(ids)
        self.wake()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every pending memory is embedded; False on timeout. A closed store
        is a :class:`StorageError`, also for a caller still waiting when it closes."""
        if self._stop.is_set():
            raise StorageError("the store is closed")
        self.wake()
        done = self._idle.wait(timeout)
        if self._stop.is_set():  # closed meanwhile: close() released the waiters
            raise StorageError("the store was closed while waiting for embeddings")
        return done

    def flushed(self) -> bool:
        """Whether nothing is pending now, without waiting or waking the worker (an async
        :meth:`flush` looks again and again); a closed store is a :class:`StorageError`."""
        if self._stop.is_set():
            raise StorageError("the store was closed while waiting for embeddings")
        return self._idle.is_set()

    def close(self, timeout: float = 30.0) -> None:
        # while the embedder is down, do not hold the caller for long: the pending
        # memories stay pending in the store and are embedded on the next open
        if self._stop.is_set():
            return
        with contextlib.suppress(StorageError):  # another thread closed it meanwhile
            self.flush(timeout if self.last_error is None else min(timeout, 2.0))
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)
        self._idle.set()  # whoever still waits in flush() wakes, and learns it closed

    def catch_up(self, limit: int = CATCH_UP, *, wait: float = CATCH_UP_WAIT) -> int:
        """Embed a small backlog now, in the caller's thread, so a query right after a
        write finds it by meaning too (the README's first query). A backlog of more than
        ``limit`` memories (a bulk load) is left to the background thread; so is an
        embedder that is failing or not in process (``in_process``: a remote endpoint).
        When the background thread is already embedding a small backlog (the write's
        own batch, perhaps), the query waits for it, at most ``wait`` seconds: skipping
        it would search without the memory just written. Returns how many memories
        this call embedded."""
        if self._idle.is_set() or self.last_error is not None:
            return 0
        if not getattr(self.embedder, "in_process", False):  # a remote endpoint: the
            return 0  # query does not wait for documents (their round trips add up)
        try:
            if len(self.store.search.pending_embeddings(limit + 1)) > limit:
                return 0  # a bulk load: the background thread's work, not a query's
        except MemlociError:
            return 0
        if not self._embedding.acquire(timeout=wait):  # a slow batch: search without it
            return 0
        try:
            return self._embed_batch(None, at_most=limit)
        except MemlociError as exc:  # the background thread reports and retries
            log.debug("catch-up embedding skipped: %s", exc)
            return 0
        finally:
            self._embedding.release()

    def run_once(
        self, progress: Callable[[int], None] | None = None, *, at_most: int | None = None
    ) -> int:
        """Embed one batch; returns how many nodes it embedded. ``at_most``: only if no
        more than that many are pending (else nothing)."""
        with self._embedding:
            return self._embed_batch(progress, at_most=at_most)

    def _embed_batch(
        self, progress: Callable[[int], None] | None, *, at_most: int | None = None
    ) -> int:
        """:meth:`run_once`'s work; the caller holds ``_embedding``."""
        if at_most is not None:
            batch = self.store.search.pending_embeddings(at_most + 1)
            if len(batch) > at_most:
                return 0
        else:
            batch = self.store.search.pending_embeddings(self.batch_size)
        if not batch:
            return 0
        texts = [document_text(p.content, p.speaker, p.key, p.subject) for p in batch]
        vectors = self.embedder.embed(texts)
        if not self.bound:
            bind(self.store, self.embedder.model_id, int(vectors.shape[1]))
            self.bound = True
        self.store.search.save_embeddings(batch, vectors)
        if self.link_mentions:
            try:
                link_mentions(
                    self.store,
                    [p.id for p in batch],
                    now=datetime.now(UTC),
                    register=self.register_mentions,
                    speakers=self.speakers,
                )
            except MemlociError as exc:  # the vectors are saved; links are a bonus
                log.warning("entity linking skipped for a batch: %s", exc)
        if progress:
            progress(len(batch))
        return len(batch)

    def _apply_queued(self) -> None:
        """Write what searches and ``remember`` queued: access counts, entity links."""
        with self._lock:
            touches, self._touches = self._touches, {}
            links, self._links = self._links, []
        if links:
            try:
                link_mentions(
                    self.store,
                    links,
                    now=datetime.now(UTC),
                    register=self.register_mentions,
                    speakers=self.speakers,
                )
            except MemlociError as exc:  # links are a bonus; the memories are stored
                log.warning("entity linking skipped for %d memories: %s", len(links), exc)
        now = datetime.now(UTC)
        for namespace, ids in touches.items():
            self.store.memories.touch(namespace, sorted(ids), now=now)

    def _run(self) -> None:
        # Background work yields to the hot path and to queries: lower this thread's
        # priority (threads it starts inherit it). Linux-only; elsewhere a no-op.
        with contextlib.suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        while not self._stop.is_set():
            self._wake.wait(1.0)
            self._wake.clear()
            try:
                self._apply_queued()
                while not self._stop.is_set() and self.run_once():
                    self._apply_queued()
                    self._recovered()
                self._recovered()
            except Exception as exc:
                if exiting():  # the interpreter is shutting down (no close()): its pools
                    return  # refuse work; what was not embedded stays queued, quietly
                if isinstance(exc, MemlociError):
                    self._failed(str(exc))
                else:  # keep the worker alive; report
                    self._failed(repr(exc), unexpected=True)
                continue
            if not self._wake.is_set():
                self._idle.set()

    def _failed(self, error: str, *, unexpected: bool = False) -> None:
        """Record a failed attempt; retry after a growing pause (1 s doubling up to
        :data:`MAX_BACKOFF`) that :meth:`wake` (a new memory, ``flush``) cuts short."""
        self.last_error = error
        self._failures += 1
        if unexpected:
            log.exception("embedding worker error")
        elif self._failures == 1:  # one line per outage, not one per attempt
            log.warning("embedding failed, will retry in the background: %s", error)
        self._wake.wait(min(MAX_BACKOFF, 2.0 ** (self._failures - 1)))

    def _recovered(self) -> None:
        if self._failures:
            log.warning("embedding works again after %d failed attempts", self._failures)
        self._failures = 0
        self.last_error = None


def link_mentions(
    store: Store,
    ids: Sequence[str],
    *,
    now: datetime,
    register: bool = False,
    speakers: SpeakerNames | None = None,
) -> int:
    """Link the current episodes among ``ids`` to the entities they are about: their
    speaker, when the label is a name or the other speaker calls them by one (see
    :class:`~memloci.consolidation.speakers.SpeakerNames`; created as a ``person`` if
    new), and the proper names they mention (rule-based, see
    :mod:`memloci.retrieval.mentions`) that are already known entities — or, with
    ``register``, new ``concept`` entities. A speaker named just now gets their earlier
    turns linked too. One transaction; returns how many links are new. Each new link
    counts as a mention of its entity."""
    rows = store.graph.mention_texts(ids)
    called = _called(store, rows, speakers or SpeakerNames())
    # (node, namespace, [(name, type, whether a new entity may be made of it)])
    found: list[tuple[str, str, list[tuple[str, EntityType, bool]]]] = []
    for node_id, namespace, speaker, content in rows:
        person = speaker_name(speaker)
        people = [p for p in (person, called.pop((namespace, node_id), None)) if p]
        names = [(p, EntityType.PERSON, True) for p in people]
        names += [(m, EntityType.CONCEPT, register) for m in mentions(content) if m not in people]
        # a fact without a subject is about the name it begins with ("Caroline attended…");
        # so is a turn, when that name is a known entity ("Ana got promoted already!")
        lead = leading_name(content)
        if lead and all(lead[0] != n for n, _, _ in names):
            create = False if speaker else lead[1] or register
            names.append((lead[0], EntityType.CONCEPT, create))
        if names:
            found.append((node_id, namespace, names))
    found += [(i, ns, [(name, EntityType.PERSON, True)]) for (ns, i), name in called.items()]
    if not found:
        return 0
    linked = 0
    with store.batch(), contextlib.ExitStack() as locks:
        for namespace in sorted({ns for _, ns, _ in found}):  # one name, one entity
            locks.enter_context(store.exclusive(entities_lock(namespace)))
        known: dict[tuple[str, str], Entity] = {}
        changed: set[tuple[str, str]] = set()
        for node_id, namespace, names in found:
            for name, kind, create in names:
                key = (namespace, " ".join(name.split()).casefold())
                entity = known.get(key) or store.entities.find_entity(namespace, name)
                if entity is None and not create:
                    continue
                if entity is None:
                    entity = store.entities.insert_entity(
                        Entity(
                            id=short_id(),
                            namespace=namespace,
                            canonical_name=name,
                            type=kind,
                            first_seen=now,
                            last_seen=now,
                            mention_count=0,
                        )
                    )
                try:
                    new = store.entities.link_entities(namespace, node_id, [entity.id])
                except NotFoundError:  # forgotten or purged meanwhile
                    break
                if new:
                    linked += new
                    changed.add(key)
                    generic = entity.type is EntityType.CONCEPT
                    entity = entity.model_copy(
                        update={
                            "mention_count": entity.mention_count + new,
                            "last_seen": max(entity.last_seen, now),
                            "type": kind if generic else entity.type,
                        }
                    )
                known[key] = entity
        for key in changed:
            store.entities.update_entity(known[key])
    return linked


def _called(
    store: Store, rows: Sequence[tuple[str, str, str | None, str]], speakers: SpeakerNames
) -> dict[tuple[str, str], str]:
    """(namespace, turn id) → the name its speaker is called by, when the label does not
    say it already, for the turns in ``rows`` and the older turns of a speaker named just
    now (see :meth:`SpeakerNames.of`)."""
    if not any(label for _, _, label, _ in rows):
        return {}
    by_namespace: dict[str, list[str]] = {}
    for node_id, namespace, _, _ in rows:
        by_namespace.setdefault(namespace, []).append(node_id)
    out: dict[tuple[str, str], str] = {}
    for namespace, ids in by_namespace.items():
        turns = store.memories.get_nodes(namespace, ids)
        out |= {(namespace, i): name for i, name in speakers.of(store, turns).items()}
    return out
