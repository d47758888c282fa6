"""Paged lists (layer: storage): memories, threads, entities and users, each page and
its total read in one snapshot (the backend's ``_snapshot``), paged on by cursor
(:mod:`memloci.storage.paging`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from memloci.models import NODE_ORDERS, Entity, MemoryNode, MemoryUser, Thread
from memloci.storage.base import NodeFilter
from memloci.storage.paging import (
    THREAD_KEYS,
    USER_KEYS,
    KeyPage,
    entity_keys,
    node_keyset,
    read_page,
    unknown_order,
)
from memloci.storage.rows import node_from_row, user_from_row
from memloci.storage.sql.core import DB, SQLSlice
from memloci.storage.sql.records import (
    entity_from_row,
    entity_where,
    thread_from_row,
    thread_where,
    user_where,
)
from memloci.storage.sqlfilter import filter_sql


class SQLPaging(SQLSlice[DB]):
    """``Store.pages``: paged lists of memories, threads, entities and users."""

    def _snapshot(self) -> AbstractContextManager[Any]:
        """A connection whose reads all see one snapshot (inside the thread's write
        transaction: that transaction)."""
        raise NotImplementedError

    def page_nodes(
        self,
        flt: NodeFilter,
        *,
        limit: int = 50,
        offset: int = 0,
        order: str = "created",
        cursor: str | None = None,
    ) -> KeyPage[MemoryNode]:
        d = self.db.dialect
        keys = node_keyset(order, seq=f"n.{d.rowid}", ident=d.bytewise("n.id"))
        if keys is None:
            raise unknown_order(order, NODE_ORDERS)
        where, params = filter_sql(flt, ph=d.ph)
        with self._snapshot() as c:
            return read_page(
                c,
                table="nodes n",
                columns=self.db.cols.node,
                where=where,
                params=params,
                keys=keys,
                limit=limit,
                offset=offset,
                cursor=cursor,
                ph=d.ph,
                convert=node_from_row,
            )

    def page_threads(
        self,
        namespace: str,
        *,
        user: str | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
        cursor: str | None = None,
    ) -> KeyPage[Thread]:
        d = self.db.dialect
        where, params = thread_where(namespace, user, agent)
        with self._snapshot() as c:
            return read_page(
                c,
                table="threads",
                columns=self.db.cols.thread.format(messages=f"{d.json_array_length}(messages)"),
                where=d.q(where),
                params=params,
                keys=THREAD_KEYS,
                limit=limit,
                offset=offset,
                cursor=cursor,
                ph=d.ph,
                convert=thread_from_row,
            )

    def page_entities(
        self,
        namespace: str,
        *,
        type: str | None = None,
        query: str | None = None,
        limit: int = 50,
        offset: int = 0,
        cursor: str | None = None,
    ) -> KeyPage[Entity]:
        d = self.db.dialect
        where, params = entity_where(d, namespace, type, query)
        with self._snapshot() as c:
            return read_page(
                c,
                table="entities e",
                columns=self.db.cols.entity,
                where=d.q(where),
                params=params,
                keys=entity_keys(d.nocase("e.canonical_name")),
                limit=limit,
                offset=offset,
                cursor=cursor,
                ph=d.ph,
                convert=entity_from_row,
            )

    def page_users(
        self,
        namespace: str,
        *,
        query: str | None = None,
        limit: int = 50,
        offset: int = 0,
        cursor: str | None = None,
    ) -> KeyPage[MemoryUser]:
        d = self.db.dialect
        where, params = user_where(d, namespace, query)
        with self._snapshot() as c:
            return read_page(
                c,
                table="memory_users u",
                columns=self.db.cols.user,
                where=d.q(where),
                params=params,
                keys=USER_KEYS,
                limit=limit,
                offset=offset,
                cursor=cursor,
                ph=d.ph,
                convert=user_from_row,
            )
