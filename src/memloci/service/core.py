"""What every part of MemoryService shares (layer: service): the store, the settings,
running blocking work in a thread, resolving the namespace of a call, and the caps
(``max_memories`` and the like) every write path applies."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import ParamSpec, TypeVar

from memloci import validate as v
from memloci.config import Settings
from memloci.kinds import FACT_TYPES, NodeType, Scope
from memloci.models import utcnow
from memloci.service.calls import in_thread
from memloci.storage.base import NodeFilter, Store

P = ParamSpec("P")
T = TypeVar("T")


class ServiceCore:
    """Base of MemoryService and each of its mixins (one definition of the shared helpers)."""

    store: Store
    settings: Settings

    async def _run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run blocking store or model work in a worker thread; a caller cancelled
        meanwhile leaves no write behind (:func:`~memloci.service.calls.in_thread`)."""
        return await in_thread(functools.partial(fn, *args, **kwargs))

    async def _run_steps(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """:meth:`_run` for a long job of units that each stand alone (a session
        consolidated, a file added): a caller cancelled meanwhile stops it at once; the
        units it finished stay, the open one rolls back."""
        return await in_thread(functools.partial(fn, *args, **kwargs), steps=True)

    def _ns(self, namespace: str | None) -> str:
        """The call's namespace, validated (the configured one when none is given)."""
        return v.namespace(namespace or self.settings.namespace)

    def _prune(
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
            self.store.prune_oldest(flt, cap, now=utcnow())

    def _prune_facts(self, ns: str, created: Sequence[str]) -> None:
        """The fact cap after facts ``created`` (consolidation): each owner of user facts
        among them keeps ``max_memories`` of their own, shared facts count together."""
        cap = self.settings.max_memories
        if cap is None or not created:
            return
        nodes = self.store.get_nodes(ns, list(created))
        owners = {n.user for n in nodes if n.scope is Scope.USER and n.user is not None}
        for owner in sorted(owners):
            self._prune(ns, FACT_TYPES, cap, owner)
        if any(n.scope is not Scope.USER or n.user is None for n in nodes):
            self._prune(ns, FACT_TYPES, cap)
