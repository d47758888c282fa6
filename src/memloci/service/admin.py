"""Bulk and housekeeping operations of MemoryService (layer: service).

``MemoryService.admin``: batch deletes, export and import, embedding catch-up.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from memloci import validate as v
from memloci.consolidation.profiles import embed_profiles
from memloci.errors import NotFoundError, ProviderError, ValidationError
from memloci.models import NodeType, utcnow
from memloci.providers.base import Embedder
from memloci.service.calls import threaded
from memloci.service.core import Service
from memloci.storage.base import NodePatch, Store, StoreGauges

if TYPE_CHECKING:  # loaded on first export or import
    from memloci.service import transfer

BATCH_MAX = 1000


class Admin(Service):
    """forget_many (atomic batch delete), export / import, embedding catch-up, and what a
    server's operations surface reads (gauges, readiness)."""

    @threaded
    def gauges(self) -> StoreGauges:
        """The store's size, embedding backlog and pool figures (a server's ``/metrics``)."""
        return self.store.gauges()

    @threaded
    def ping(self) -> None:
        """Return once the store answers a read; a StorageError when it cannot."""
        self.store.get_meta("embedding_model")

    @threaded
    def load_embedder(self) -> str:
        """Load an in-process embedding model now, rather than at the first embedding that
        needs it: ``"loaded"``; ``"remote"`` for an endpoint (nothing to load), ``"none"``
        without an embedder. A model that cannot load raises its ProviderError."""
        load = getattr(self.embedder, "load", None)
        if self.embedder is None:
            return "none"
        if not getattr(self.embedder, "in_process", False) or not callable(load):
            return "remote"
        load()
        return "loaded"

    @threaded
    def forget_many(
        self,
        ids: Sequence[str],
        *,
        namespace: str | None = None,
        types: Sequence[NodeType] | None = None,
        hard: bool = False,
    ) -> list[str]:
        """Delete several memories at once: all of them or, if one is unknown, none.

        ``types`` restricts which kinds may be deleted (an id of another kind counts as
        unknown). Soft delete ends validity (history kept); ``hard`` purges.
        """
        ns = self.core.ns(namespace)
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise ValidationError("ids must be a list of memory ids")
        wanted = list(dict.fromkeys(v.memory_id(i) for i in ids))
        if not wanted:
            raise ValidationError("ids is empty", hint="give at least one memory id")
        if len(wanted) > BATCH_MAX:
            raise ValidationError(f"at most {BATCH_MAX} ids per batch, got {len(wanted)}")

        found = {n.id: n for n in self.store.memories.get_nodes(ns, wanted)}
        missing = [i for i in wanted if i not in found or (types and found[i].type not in types)]
        if missing:
            raise NotFoundError(
                f"{len(missing)} of {len(wanted)} ids are unknown in namespace {ns!r}; "
                "nothing was deleted",
                hint="list the memories to see their ids",
                missing=missing,
            )
        now = utcnow()
        with self.store.batch():
            for mid in wanted:
                if hard:
                    self.store.memories.purge_node(ns, mid)
                elif found[mid].valid_until is None:
                    self.store.memories.update_node(ns, mid, NodePatch(valid_until=now))
        return wanted

    @threaded
    def namespaces(self) -> list[str]:
        """Every namespace that holds memories."""
        return self.store.namespaces()

    # ------------------------------------------------------------------ transfer
    def export_lines(self, namespace: str | None = None, *, vectors: bool = True) -> Iterator[str]:
        """The namespace as JSON lines (see :mod:`memloci.service.transfer`); run it in a thread."""
        from memloci.service import transfer

        return transfer.export_lines(self.store, self.core.ns(namespace), vectors=vectors)

    @threaded
    def import_lines(
        self,
        lines: Iterable[str],
        namespace: str | None = None,
        progress: transfer.Progress | None = None,
    ) -> transfer.ImportReport:
        from memloci.service import transfer

        ns = self.core.ns(namespace)
        model = self.embedder.model_id if self.embedder else None
        dim = self.embedder.dimension if self.embedder else None

        def run() -> transfer.ImportReport:  # one call: once the records are in, it ends
            report = transfer.import_lines(
                self.store, lines, ns, embedding_model=model, dimension=dim, progress=progress
            )
            if self.worker:
                self.worker.wake()
            if self.embedder is not None and (report.chunks_to_embed or report.names_to_embed):
                self._embed_imported(ns, report)
            embed_profiles(self.store, self.embedder, ns)  # the imported entities' profiles
            return report

        try:
            return run()
        finally:
            self.owners.changed(ns)  # it may bring users merged into others

    def _embed_imported(self, namespace: str, report: transfer.ImportReport) -> None:
        """Embed what an import brought with vectors of another model: knowledge chunks
        and entity names. An embedder that fails leaves a warning in the report; the
        records are imported either way (``memloci reembed`` embeds the chunks later)."""
        from memloci.service.knowledge import embed_sources

        assert self.embedder is not None
        try:
            if report.chunks_to_embed:
                batch = self.settings.embed_batch_size
                embed_sources(self.store, self.embedder, [namespace], batch=batch)
            embed_entity_names(self.store, self.embedder, namespace, report.names_to_embed)
        except ProviderError as exc:
            report.errors.append(
                f"the embedder failed ({exc.message}): knowledge chunks or entity names "
                "were left without vectors (`memloci reembed` embeds the chunks)"
            )

    @threaded
    def embed_pending(self, progress: transfer.Progress | None = None) -> int:
        """Embed everything still waiting, reporting progress; returns how many."""
        if self.worker is None:
            return 0
        done = 0
        while n := self.worker.run_once(progress):
            done += n
        return done


def embed_entity_names(store: Store, embedder: Embedder, namespace: str, ids: list[str]) -> int:
    """Embed the names of entities ``ids`` of the namespace with ``embedder``'s model (as
    consolidation embeds a new entity's name, to match mentions by meaning); returns how
    many."""
    model = embedder.model_id
    entities = [e for e in (store.entities.get_entity(namespace, i) for i in ids) if e is not None]
    for i in range(0, len(entities), 64):
        part = entities[i : i + 64]
        vectors = embedder.embed([e.canonical_name for e in part])
        with store.batch():
            for entity, vec in zip(part, vectors, strict=True):
                blob = np.ascontiguousarray(vec, dtype=np.float32).tobytes()
                store.jobs.save_entity_vector(namespace, entity.id, model, blob)
    return len(entities)
