"""MemoryService (layer: service): the one API every interface calls, and the
composition root of the services it is made of.

Each area is a small service holding what it needs (the shared
:class:`~memloci.service.core.Core`: store, settings, embedder, worker; and the other
services it calls): ``memories``, ``edits``, ``records``, ``keys``, ``paging``,
``context``, ``consolidation``, ``knowledge``, ``admin``, ``privacy``. Their methods
are written once, as blocking code (:class:`~memloci.service.calls.threaded`):
``await service.memories.remember(...)`` runs one in a worker thread,
``service.memories.search.now(...)`` in the caller's thread.
"""

from __future__ import annotations

from typing import Any

from memloci.config import Settings
from memloci.errors import EmbeddingModelError
from memloci.providers.base import Embedder, Reranker
from memloci.retrieval.pipeline import Retriever
from memloci.service.admin import Admin
from memloci.service.calls import flushed
from memloci.service.consolidation import Consolidation
from memloci.service.context import Context
from memloci.service.core import Core
from memloci.service.edits import Edits
from memloci.service.keys import Keys
from memloci.service.knowledge import Knowledge
from memloci.service.memories import Memories
from memloci.service.paging import Paging
from memloci.service.privacy import Privacy
from memloci.service.records import Records
from memloci.service.worker import EmbeddingWorker, bind_embedder, stale_vectors
from memloci.storage.base import NodeFilter, Store


class MemoryService:
    """Write paths, search and context over one store and one embedder, by area."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        settings: Settings,
        *,
        reembed: bool = False,
        reranker: Reranker | None = None,
    ) -> None:
        """``reembed=True`` drops vectors from another model or an older form
        (:func:`~memloci.service.worker.stale_vectors`), so they are rebuilt;
        ``reranker`` (default: the one ``settings.reranker`` names, if any) reorders
        the best search hits."""
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.worker: EmbeddingWorker | None = None
        if settings.read_only:  # nothing written: no binding, no embedding, no reinforcing
            embedder = self.embedder = _reading_embedder(store, embedder)
            self.settings = settings = settings.model_copy(update={"reinforce_on_search": False})
        elif embedder is not None:
            if reembed and stale_vectors(store, embedder.model_id):
                store.search.reset_embeddings()
            bound = bind_embedder(store, embedder)  # an unreachable embedder never blocks
            self.worker = EmbeddingWorker(
                store, embedder, batch_size=settings.embed_batch_size, bound=bound
            )
        self.retriever = Retriever(store, embedder, settings, reranker=reranker)
        core = Core(store, settings, embedder, self.worker)
        self.owners = core.owners
        self.consolidation = Consolidation(core)
        self.edits = Edits(core)
        self.memories = Memories(core, self.retriever, self.edits, self.consolidation)
        self.context = Context(core, self.memories)
        self.records = Records(core)
        self.keys = Keys(core)
        self.paging = Paging(core)
        self.knowledge = Knowledge(core)
        self.admin = Admin(core)
        self.privacy = Privacy(core)

    def filter(self, **kwargs: Any) -> NodeFilter:
        """A validated :class:`NodeFilter` from keyword arguments (see
        :meth:`Owners.filter <memloci.service.owners.Owners.filter>`)."""
        return self.owners.filter(**kwargs)

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until background embedding has caught up."""
        if self.worker is None:
            return True
        return await flushed(self.worker, timeout)

    def close(self) -> None:
        self.consolidation.close()
        if self.worker is not None:
            self.worker.close()
        self.store.close()


def _reading_embedder(store: Store, embedder: Embedder | None) -> Embedder | None:
    """The embedder a read-only service searches with: ``embedder`` when the store's
    vectors are its model's, None (full text only) when the store holds no vectors; a
    store of another model is an EmbeddingModelError, as when it is opened to write."""
    known = store.get_meta("embedding_model")
    if embedder is None or known is None:
        return None
    if known != embedder.model_id:
        raise EmbeddingModelError(
            f"this store holds vectors from {known!r}, not {embedder.model_id!r}",
            hint="open it with the embedder that made it (or embedder='none' for full text)",
        )
    return embedder
