"""PostgreSQL backend (layer: storage): psycopg 3 pool, pgvector HNSW, tsvector + GIN.

Import cost stays out of the SQLite path: nothing imports this package unless a
``postgresql://`` location is used.
"""

from memloci.storage.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
