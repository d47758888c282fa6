"""SQLite backend (layer: storage): the default store, everything in one file.

:class:`~memloci.storage.sqlite.base.SQLiteDatabase` owns the connections; the slices
given it: memories (:mod:`.nodes`), search primitives (:mod:`.search`), walks
(:mod:`.walks`), users and entities (:mod:`.records`), jobs (:mod:`.consolidation`),
knowledge (:mod:`.knowledge`), paged lists (:mod:`.paging`), privacy (:mod:`.privacy`)
and the doctor (:mod:`.doctor`).
"""

from __future__ import annotations

import os

from memloci.models import StoreGauges
from memloci.storage.base import Health
from memloci.storage.sql.store import SQLStore
from memloci.storage.sqlite.base import SQLiteDatabase
from memloci.storage.sqlite.consolidation import SQLiteConsolidation
from memloci.storage.sqlite.doctor import SQLiteDoctor
from memloci.storage.sqlite.knowledge import SQLiteKnowledge
from memloci.storage.sqlite.nodes import SQLiteNodes
from memloci.storage.sqlite.paging import SQLitePaging
from memloci.storage.sqlite.privacy import SQLitePrivacy
from memloci.storage.sqlite.records import SQLiteEntities, SQLitePeople
from memloci.storage.sqlite.search import SQLiteSearch
from memloci.storage.sqlite.walks import SQLiteWalks


class SQLiteStore(SQLStore[SQLiteDatabase]):
    """The default store: everything in one SQLite file."""

    _privacy: SQLitePrivacy

    def __init__(
        self,
        path: str | os.PathLike[str] = "memloci.db",
        *,
        busy_timeout: float | None = None,
        read_only: bool = False,
    ) -> None:
        """See :class:`~memloci.storage.sqlite.base.SQLiteDatabase`."""
        db = SQLiteDatabase(path, busy_timeout=busy_timeout, read_only=read_only)
        self._doctor = SQLiteDoctor(db)
        super().__init__(
            db,
            memories=SQLiteNodes(db),
            search=SQLiteSearch(db),
            graph=SQLiteWalks(db),
            people=SQLitePeople(db),
            entities=SQLiteEntities(db),
            jobs=SQLiteConsolidation(db),
            knowledge=SQLiteKnowledge(db),
            pages=SQLitePaging(db),
            privacy=SQLitePrivacy(db),
        )

    @property
    def path(self) -> str:
        return self.db.path

    @property
    def read_only(self) -> bool:
        return self.db.read_only

    def close(self) -> None:
        """Close; scrub first when memories were hard-deleted since the last scrub."""
        self._privacy.before_close()
        self.db.close()

    def doctor(self, *, repair: bool = False) -> Health:
        return self._doctor.doctor(repair=repair)

    def gauges(self) -> StoreGauges:
        """The file's size with its write-ahead log (the pages, for an in-memory store)."""
        db = self.db
        with db.reading() as c:
            pending = int(c.execute("SELECT count(*) FROM nodes WHERE embedded = 0").fetchone()[0])
            size = db.size_bytes(c)
        if not db._memory:
            files = (db.path, f"{db.path}-wal", f"{db.path}-shm")
            size = sum(os.path.getsize(f) for f in files if os.path.exists(f))
        return StoreGauges(size_bytes=size, pending_embeddings=pending)
