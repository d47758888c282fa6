"""What every part of MemoryService shares (layer: service): the store, the settings,
running blocking work in a thread, and resolving the namespace of a call."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from memloci import validate as v
from memloci.config import Settings
from memloci.storage.base import Store

P = ParamSpec("P")
T = TypeVar("T")


class ServiceCore:
    """Base of MemoryService and each of its mixins (one definition of the shared helpers)."""

    store: Store
    settings: Settings

    async def _run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run blocking store or model work in a worker thread."""
        return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))

    def _ns(self, namespace: str | None) -> str:
        """The call's namespace, validated (the configured one when none is given)."""
        return v.namespace(namespace or self.settings.namespace)
