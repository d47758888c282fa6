"""Paged lists (layer: storage): memories, threads, entities and users, each page and
its total read in one snapshot (the backend's ``_snapshot``), paged on by cursor
(:mod:`memloci.storage.paging`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from memloci.models import (
    NODE_ORDERS,
    Entity,
    EntityFilter,
    MemoryNode,
    MemoryUser,
    Thread,
    ThreadFilter,
    UserFilter,
)
from memloci.storage.base import NodeFilter
from memloci.storage.paging import (
    THREAD_KEYS,
    USER_KEYS,
    KeyPage,
    Keyset,
    PageRequest,
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

T = TypeVar("T")


class SQLPaging(SQLSlice[DB]):
    """``Store.pages``: paged lists of memories, threads, entities and users."""

    def _snapshot(self) -> AbstractContextManager[Any]:
        """A connection whose reads all see one snapshot (inside the thread's write
        transaction: that transaction)."""
        raise NotImplementedError

    def _read(
        self,
        table: str,
        columns: str,
        where: tuple[str, Sequence[Any]],
        keys: Keyset,
        page: PageRequest,
        convert: Callable[[Any], T],
    ) -> KeyPage[T]:
        """``page`` of ``table`` (``columns`` and ``where`` in ``?`` placeholders, with
        its parameters) in ``keys`` order, and the total, in one snapshot."""
        d = self.db.dialect
        sql, params = where
        with self._snapshot() as c:
            return read_page(
                c,
                table=table,
                columns=columns,
                where=d.q(sql),
                params=params,
                keys=keys,
                page=page,
                ph=d.ph,
                convert=convert,
            )

    def page_nodes(
        self, flt: NodeFilter, page: PageRequest, *, order: str = "created"
    ) -> KeyPage[MemoryNode]:
        d = self.db.dialect
        keys = node_keyset(order, seq=f"n.{d.rowid}", ident=d.bytewise("n.id"))
        if keys is None:
            raise unknown_order(order, NODE_ORDERS)
        where = filter_sql(flt)
        return self._read("nodes n", self.db.cols.node, where, keys, page, node_from_row)

    def page_threads(self, flt: ThreadFilter, page: PageRequest) -> KeyPage[Thread]:
        columns = self.db.cols.thread.format(
            messages=f"{self.db.dialect.json_array_length}(messages)"
        )
        where = thread_where(flt.namespace, flt.user, flt.agent)
        return self._read("threads", columns, where, THREAD_KEYS, page, thread_from_row)

    def page_entities(self, flt: EntityFilter, page: PageRequest) -> KeyPage[Entity]:
        d = self.db.dialect
        where = entity_where(d, flt.namespace, flt.type, flt.query)
        keys = entity_keys(d.nocase("e.canonical_name"))
        return self._read("entities e", self.db.cols.entity, where, keys, page, entity_from_row)

    def page_users(self, flt: UserFilter, page: PageRequest) -> KeyPage[MemoryUser]:
        where = user_where(self.db.dialect, flt.namespace, flt.query)
        return self._read(
            "memory_users u", self.db.cols.user, where, USER_KEYS, page, user_from_row
        )
