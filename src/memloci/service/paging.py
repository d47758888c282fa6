"""Paged lists of MemoryService (layer: service): memories, threads, entities and users,
one page and its total read in one snapshot, paged on by an opaque cursor (see
:mod:`memloci.storage.paging`) or, for compatibility, by offset.

``MemoryService.paging``; the REST lists and the web UI page
through it. ``cursor`` is the ``next_cursor`` of the page before: the next page starts
strictly after that page's last row, so rows written meanwhile never make another row
be skipped or listed twice (offset paging does, while the list changes).
"""

from __future__ import annotations

from memloci import validate as v
from memloci.errors import ValidationError
from memloci.models import (
    Entity,
    EntityFilter,
    EntityType,
    MemoryNode,
    MemoryUser,
    PageRequest,
    Thread,
    ThreadFilter,
    UserFilter,
)
from memloci.service.calls import threaded
from memloci.service.core import Service
from memloci.service.records import entity_type
from memloci.storage.base import NodeFilter
from memloci.storage.paging import CURSOR_MAX, KeyPage


def _page(limit: int, offset: int, cursor: str | None) -> PageRequest:
    """The page asked for, checked: ``limit`` and ``offset`` in range, and a cursor as
    given (the store checks what it holds) or a clear error. An empty cursor is the
    first page (as none: a form's blank field, ``?cursor=``)."""
    v.page(limit, offset)
    if cursor is None or cursor == "":
        return PageRequest(limit, offset)
    if not isinstance(cursor, str) or not 1 <= len(cursor) <= CURSOR_MAX:
        raise ValidationError(
            "invalid cursor: not a cursor this server made",
            hint="pass the next_cursor of the previous page unchanged",
        )
    if offset:
        raise ValidationError(
            "give a cursor or an offset, not both: the cursor says where the page starts",
            hint="drop offset when you pass next_cursor",
        )
    return PageRequest(limit, offset, cursor)


class Paging(Service):
    """``page_nodes``, ``page_threads``, ``page_entities``, ``page_users``."""

    @threaded
    def page_nodes(
        self,
        flt: NodeFilter,
        *,
        limit: int = 50,
        offset: int = 0,
        order: str = "created",
        cursor: str | None = None,
    ) -> KeyPage[MemoryNode]:
        """Memories of ``flt`` in ``order`` (one of ``NODE_ORDERS``), with their total."""
        page = _page(limit, offset, cursor)
        return self.store.pages.page_nodes(flt, page, order=order)

    @threaded
    def page_threads(
        self,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
        cursor: str | None = None,
    ) -> KeyPage[Thread]:
        """Threads, last updated first (a thread that gets messages moves to the top)."""
        ns, agent = self.core.ns(namespace), v.ident(agent, "agent")
        page = _page(limit, offset, cursor)
        flt = ThreadFilter(ns, user=self.owners.owner(ns, user), agent=agent)
        return self.store.pages.page_threads(flt, page)

    @threaded
    def page_entities(
        self,
        *,
        namespace: str | None = None,
        type: EntityType | str | None = None,
        query: str | None = None,
        limit: int = 50,
        offset: int = 0,
        cursor: str | None = None,
    ) -> KeyPage[Entity]:
        """Entities, most mentioned first; ``query`` matches names and aliases."""
        ns, kind, q = self.core.ns(namespace), entity_type(type), v.label(query, "query", 200)
        page = _page(limit, offset, cursor)
        return self.store.pages.page_entities(EntityFilter(ns, kind, q), page)

    @threaded
    def page_users(
        self,
        *,
        namespace: str | None = None,
        query: str | None = None,
        limit: int = 50,
        offset: int = 0,
        cursor: str | None = None,
    ) -> KeyPage[MemoryUser]:
        """Memory users, oldest first; ``query`` matches id or display name."""
        ns, q = self.core.ns(namespace), v.label(query, "query", 200)
        return self.store.pages.page_users(UserFilter(ns, q), _page(limit, offset, cursor))
