"""PostgreSQL paged lists (layer: storage): the lists are :mod:`memloci.storage.sql.paging`;
here the snapshot a page and its total are read in."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from memloci.storage.postgres.base import PostgresDatabase
from memloci.storage.sql.paging import SQLPaging


class PostgresPaging(SQLPaging[PostgresDatabase]):
    """``Store.page_*`` on PostgreSQL."""

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[Any]:
        """A connection in a snapshot transaction (inside the thread's write
        transaction: that transaction)."""
        nested = getattr(self.db._local, "conn", None) is not None
        with self.db.reading() as c:
            if nested:
                yield c
                return
            with c.transaction():
                c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield c
