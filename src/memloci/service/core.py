"""What every service of MemoryService shares (layer: service): the store, the settings,
the embedder and its worker, the merged users' cache, resolving the namespace of a call,
reading one memory, and the caps (``max_memories`` and the like) every write path
applies; :class:`Service`, what each service is made from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memloci import validate as v
from memloci.config import Settings
from memloci.errors import NotFoundError
from memloci.kinds import FACT_TYPES, NodeType, Scope
from memloci.models import MemoryNode, utcnow
from memloci.providers.base import Embedder
from memloci.service.owners import Owners
from memloci.service.worker import EmbeddingWorker
from memloci.storage.base import NodeFilter, Store


class Core:
    """The store, settings, embedder, embedding worker and merged users' cache
    (:class:`~memloci.service.owners.Owners`, one for all) every service holds, and the
    helpers they share."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        embedder: Embedder | None,
        worker: EmbeddingWorker | None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.embedder = embedder
        self.worker = worker
        self.owners = Owners(store, settings)

    def ns(self, namespace: str | None) -> str:
        """The call's namespace, validated (the configured one when none is given)."""
        return v.namespace(namespace or self.settings.namespace)

    def node(self, ns: str, mid: str) -> MemoryNode:
        """Memory ``mid`` of namespace ``ns`` (both validated), or a NotFoundError."""
        node = self.store.memories.get_node(ns, mid)
        if node is None:
            raise NotFoundError(
                f"no memory {mid!r} in namespace {ns!r}", hint="list memories to see their ids"
            )
        return node

    def prune(
        self, ns: str, types: tuple[NodeType, ...], cap: int | None, user: str | None = None
    ) -> None:
        """Keep at most ``cap`` memories of these types in the namespace (records no longer
        current go first, then the oldest);
        with ``user``, count that user's own memories only, so one customer's new facts
        never evict another's."""
        if cap is not None:
            flt = NodeFilter(namespaces=(ns,), types=types, include_invalid=True)
            if user is not None:
                flt = replace(flt, owner_user=user, scopes=(Scope.USER,))
            elif types == FACT_TYPES:  # shared facts count together
                flt = replace(flt, scopes=(Scope.SESSION, Scope.AGENT, Scope.GLOBAL))
            self.store.memories.prune_oldest(flt, cap, now=utcnow())

    def prune_facts(self, ns: str, created: Sequence[str]) -> None:
        """The fact cap after facts ``created`` (consolidation): each owner of user facts
        among them keeps ``max_memories`` of their own, shared facts count together."""
        cap = self.settings.max_memories
        if cap is None or not created:
            return
        nodes = self.store.memories.get_nodes(ns, list(created))
        owners = {n.user for n in nodes if n.scope is Scope.USER and n.user is not None}
        for owner in sorted(owners):
            self.prune(ns, FACT_TYPES, cap, owner)
        if any(n.scope is not Scope.USER or n.user is None for n in nodes):
            self.prune(ns, FACT_TYPES, cap)


class Service:
    """A service of MemoryService, made from the shared :class:`Core`: it holds the core
    and, as its own attributes, what the core holds."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.store = core.store
        self.settings = core.settings
        self.embedder = core.embedder
        self.worker = core.worker
        self.owners = core.owners
