"""PostgreSQL backend (layer: storage): many servers, one database.

:class:`~memloci.storage.postgres.base.PostgresDatabase` owns the connection pool; the
slices given it: memories (:mod:`.nodes`), search primitives (:mod:`.search`), walks
(:mod:`.walks`), entities (:mod:`.records`), jobs (:mod:`.consolidation`), knowledge
(:mod:`.knowledge`), paged lists (:mod:`.paging`) and privacy (:mod:`.privacy`); users,
threads and keys are the shared :class:`~memloci.storage.sql.records.SQLPeople`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from memloci.models import StoreGauges
from memloci.storage.base import Health
from memloci.storage.postgres.base import PostgresDatabase
from memloci.storage.postgres.consolidation import PostgresConsolidation
from memloci.storage.postgres.knowledge import PostgresKnowledge
from memloci.storage.postgres.nodes import PostgresNodes
from memloci.storage.postgres.paging import PostgresPaging
from memloci.storage.postgres.privacy import PostgresPrivacy
from memloci.storage.postgres.records import PostgresEntities
from memloci.storage.postgres.search import PostgresSearch
from memloci.storage.postgres.walks import PostgresWalks
from memloci.storage.sql.records import SQLPeople
from memloci.storage.sql.store import SQLStore


class PostgresStore(SQLStore[PostgresDatabase]):
    """memloci on PostgreSQL + pgvector: ``PostgresStore("postgresql://user:pw@host/db")``.

    ``schema`` (or a ``?schema=`` URL parameter) keeps the tables in their own schema;
    ``pool_size`` bounds the connections this process opens.
    """

    def __init__(self, url: str, *, schema: str | None = None, pool_size: int = 8) -> None:
        db = PostgresDatabase(url, schema=schema, pool_size=pool_size)
        super().__init__(
            db,
            memories=PostgresNodes(db),
            search=PostgresSearch(db),
            graph=PostgresWalks(db),
            people=SQLPeople(db),
            entities=PostgresEntities(db),
            jobs=PostgresConsolidation(db),
            knowledge=PostgresKnowledge(db),
            pages=PostgresPaging(db),
            privacy=PostgresPrivacy(db),
        )

    @property
    def url(self) -> str:
        return self.db.url

    @property
    def schema(self) -> str | None:
        return self.db.schema

    @property
    def server_advice(self) -> list[str]:
        """What the settings check made on open advised (see :mod:`.settings_check`)."""
        return self.db.server_advice

    def bulk_load(self, *, work_mem: str = "1GB") -> AbstractContextManager[None]:
        """See :meth:`PostgresDatabase.bulk_load`."""
        return self.db.bulk_load(work_mem=work_mem)

    def build_vector_index(self, *, work_mem: str = "1GB") -> None:
        self.db.build_vector_index(work_mem=work_mem)

    def gauges(self) -> StoreGauges:
        """The whole database's size (``pg_database_size``: every schema in it), the
        backlog, and the pool's figures (its state and counters since it opened)."""
        with self.db.reading() as c:
            size, pending = c.execute(
                "SELECT pg_database_size(current_database()),"
                " (SELECT count(*) FROM nodes WHERE embedded = 0)"
            ).fetchone()
        pool = {k: int(v) for k, v in self.db._pool.get_stats().items()}
        return StoreGauges(size_bytes=int(size), pending_embeddings=int(pending), pool=pool)

    def doctor(self, *, repair: bool = False) -> Health:
        """See :meth:`memloci.storage.base.Store.doctor`. PostgreSQL types its vectors
        (pgvector, one dimension) and JSON (jsonb): no row can hold what a SQLite reader
        skips, and its full-text vectors are columns of the rows. Only the connection
        is checked; the server's own tools (``amcheck``, ``pg_dump``) check its pages.
        The notes also carry the advice of the settings check made on open."""
        with self.db.reading() as c:
            c.execute("SELECT 1").fetchone()
        return Health(
            backend="postgres",
            repaired=repair,
            notes=[
                "PostgreSQL types vectors and JSON: no damaged rows to look for",
                *self.db.server_advice,
            ],
        )
