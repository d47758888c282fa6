"""SQLite paged lists (layer: storage): the lists are :mod:`memloci.storage.sql.paging`;
here the snapshot a page and its total are read in."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from memloci.storage.sql.paging import SQLPaging
from memloci.storage.sqlite.base import SQLiteDatabase


class SQLitePaging(SQLPaging[SQLiteDatabase]):
    """``Store.page_*`` on SQLite."""

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[Any]:
        """A connection in a read transaction: every read through it sees one snapshot
        (inside the thread's write transaction: that transaction)."""
        with self.db.reading() as c:
            if c.in_transaction:
                yield c
                return
            c.execute("BEGIN")
            try:
                yield c
            finally:
                c.execute("ROLLBACK")  # it wrote nothing
