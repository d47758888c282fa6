"""PostgreSQL paged lists (layer: storage): memories, threads, entities and users, each
page and its total read in one snapshot (a REPEATABLE READ, READ ONLY transaction),
paged on by cursor (:mod:`memloci.storage.paging`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
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
from memloci.storage.postgres.records import (
    _THREAD_COLS,
    _USER_COLS,
    ENTITY_COLS,
    NODE_COLS,
    PostgresRecords,
    _thread_from_row,
    entity_from_row,
)
from memloci.storage.rows import node_from_row, user_from_row
from memloci.storage.sqlfilter import filter_sql

_ENTITY_KEYS = entity_keys("lower(e.canonical_name)")


class PostgresPaging(PostgresRecords):
    """``Store.page_*`` on PostgreSQL."""

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[Any]:
        """A connection in a snapshot transaction (inside the thread's write
        transaction: that transaction)."""
        nested = getattr(self._local, "conn", None) is not None
        with self._reading() as c:
            if nested:
                yield c
                return
            with c.transaction():
                c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield c

    def page_nodes(
        self, flt: NodeFilter, *, limit: int = 50, offset: int = 0, order: str = "created",
        cursor: str | None = None,
    ) -> KeyPage[MemoryNode]:  # fmt: skip
        keys = node_keyset(order, seq="n.seq", ident='n.id COLLATE "C"')
        if keys is None:
            raise unknown_order(order, NODE_ORDERS)
        where, params = filter_sql(flt, ph="%s")
        with self._snapshot() as c:
            return read_page(
                c, table="nodes n", columns=NODE_COLS, where=where, params=params, keys=keys,
                limit=limit, offset=offset, cursor=cursor, ph="%s", convert=node_from_row,
            )  # fmt: skip

    def page_threads(
        self, namespace: str, *, user: str | None = None, agent: str | None = None,
        limit: int = 50, offset: int = 0, cursor: str | None = None,
    ) -> KeyPage[Thread]:  # fmt: skip
        where, params = self._thread_where(namespace, user, agent)
        with self._snapshot() as c:
            return read_page(
                c, table="threads", columns=_THREAD_COLS.format(
                    messages="jsonb_array_length(messages)"),
                where=where, params=params, keys=THREAD_KEYS, limit=limit, offset=offset,
                cursor=cursor, ph="%s", convert=_thread_from_row,
            )  # fmt: skip

    def page_entities(
        self, namespace: str, *, type: str | None = None, query: str | None = None,
        limit: int = 50, offset: int = 0, cursor: str | None = None,
    ) -> KeyPage[Entity]:  # fmt: skip
        where, params = self._entity_where(namespace, type, query)
        with self._snapshot() as c:
            return read_page(
                c, table="entities e", columns=ENTITY_COLS, where=where, params=params,
                keys=_ENTITY_KEYS, limit=limit, offset=offset, cursor=cursor, ph="%s",
                convert=entity_from_row,
            )  # fmt: skip

    def page_users(
        self, namespace: str, *, query: str | None = None, limit: int = 50, offset: int = 0,
        cursor: str | None = None,
    ) -> KeyPage[MemoryUser]:  # fmt: skip
        where, params = self._user_where(namespace, query)
        with self._snapshot() as c:
            return read_page(
                c, table="memory_users u", columns=_USER_COLS, where=where, params=params,
                keys=USER_KEYS, limit=limit, offset=offset, cursor=cursor, ph="%s",
                convert=user_from_row,
            )  # fmt: skip
